"""The one scan request model: every route into a scan becomes a ``ScanOptions``.

Three routes ask for a scan: the keywords of the client's ``scan()``, the
plugin's ``Scan`` message, and the text of a SQL ``OPTIONS (...)`` clause.
Each becomes a ``ScanOptions`` here (``from_keywords``, ``from_message``,
``parse``) through one table, the fields of ``ScanOptions``: each option's
name, type, default, kind (how its value is read and where it sits in the
message) and the values the docs list for it (``SCAN_OPTIONS``; the docs'
tables of options are checked against it). A new option is one field here
and one field of the ``Scan`` message. Every error names the option; the
choices themselves are the enums of ``connect_plugin.scanning.choices``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

import pyarrow as pa
from google.protobuf.message import Message

from connect_plugin.errors import InvalidScanSpec
from connect_plugin.scanning.choices import (
    Compression,
    Evolution,
    MissingColumns,
    OnError,
    Partitioning,
    ScanChoice,
    boolean,
    choice,
    whole_number,
)
from connect_plugin.scanning.files.storage import S3_OPTIONS
from connect_plugin.scanning.formats import FORMAT_CLASSES, Format, ensure_format, format_of
from connect_plugin.scanning.loader.loader import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS
from connect_plugin.scanning.request.option_kinds import (
    Choice,
    Columns,
    Flag,
    FormatName,
    Kind,
    Number,
    Paths,
    Schema,
    Text,
    column_list,
)
from connect_plugin.scanning.request.predicates import FileFilter
from connect_plugin.scanning.request.spec import DEFAULT_SAMPLE_BYTES, ScanSpec

_ROW = "scan_option"


@dataclass(frozen=True)
class ScanOption:
    """One row of the table of options: a field of ``ScanOptions`` that users set."""

    name: str
    """The ``scan()`` keyword and the SQL option (``paths`` is also ``path`` in SQL)."""
    kind: Kind
    field: str
    """Where the ``Scan`` message keeps it, as a dotted path."""
    doc: str
    """Its values as the docs' table of options lists them (``{words}`` is a choice's words)."""
    default: Any

    @property
    def values(self) -> str:
        """The docs' cell of values: ``doc`` with a choice's words filled in."""
        words = self.kind.words()
        return self.doc if words is None else self.doc.format(words=words)


def _row(kind: Kind, message_field: str, doc: str) -> dict[str, tuple[Kind, str, str]]:
    """The metadata that makes a field of ``ScanOptions`` a row of the table of options."""
    return {_ROW: (kind, message_field, doc)}


@dataclass(frozen=True)
class ScanOptions:
    """A scan as a user asks for it, whichever way they asked.

    The files are ``paths`` with ``format``, or ``table`` (a temporary or
    catalog table, whose location and format the gateway looks up:
    ``for_table``). ``schema`` stays as given: DDL text, which only Spark
    parses, or a Spark ``DataType`` message are turned into an Arrow schema
    by the gateway before the ``ScanSpec`` is built. ``reader`` holds the
    options of the format's reader and the object store's, checked when
    the spec is built. ``None`` is an option's default (the spec's).
    """

    paths: tuple[str, ...] = field(
        default=(), metadata=_row(Paths(), "files.paths", "path, glob, `s3://` URL, or a list")
    )
    table: str | None = field(default=None, metadata=_row(Text(), "table", "temp or catalog table"))
    format: Format | None = field(
        default=None, metadata=_row(FormatName(), "files.format", "{words}")
    )
    columns: tuple[str, ...] | None = field(
        default=None, metadata=_row(Columns(), "columns", "projection list, `*`, `[]`")
    )
    schema: str | pa.Schema | Message | None = field(
        default=None, metadata=_row(Schema(), "schema_ddl", "DDL or `pyarrow.Schema`")
    )
    strict: bool = field(
        default=False, metadata=_row(Flag(), "schema_policy", '`True` = `evolution="none"`')
    )
    evolution: Evolution | None = field(
        default=None, metadata=_row(Choice(Evolution), "evolution", "{words}")
    )
    rescued_column: str | None = field(
        default=None, metadata=_row(Text(), "rescued_column", "column name")
    )
    partitioning: Partitioning = field(
        default=Partitioning.DIRS,
        metadata=_row(Choice(Partitioning), "partitioning", "{words}"),
    )
    on_error: OnError = field(
        default=OnError.FAIL, metadata=_row(Choice(OnError), "on_error", "{words}")
    )
    rejects_table: str | None = field(
        default=None,
        metadata=_row(Text(), "rejects_table", "temp table name (`reject_errors`)"),
    )
    compression: Compression = field(
        default=Compression.AUTO, metadata=_row(Choice(Compression), "compression", "{words}")
    )
    missing_columns: MissingColumns = field(
        default=MissingColumns.NULL,
        metadata=_row(Choice(MissingColumns), "missing_columns", "{words}"),
    )
    max_rows: int | None = field(
        default=None, metadata=_row(Number(), "limits.max_rows", "1..65536 (4096)")
    )
    max_bytes: int | None = field(
        default=None, metadata=_row(Number(), "limits.max_bytes", "bytes (16 MiB)")
    )
    sample_bytes: int | None = field(
        default=None, metadata=_row(Number(), "sample_bytes", "bytes per file (256 KiB)")
    )
    reader: Mapping[str, str] = field(default_factory=dict)
    schema_columns: bool = False
    """Whether the columns are the schema's, in its order: a SQL view's column list, which
    is Spark's user-given schema of the view (no option of its own)."""

    @classmethod
    def parse(cls, options: Mapping[str, str] | Iterable[tuple[str, str]]) -> ScanOptions:
        """Read text options (a map, or pairs in the order written); keys compare without case.

        Every error names the option: an unknown one (listing the known
        ones), one given twice, a value that is not one the option takes.
        """
        pairs = options.items() if isinstance(options, Mapping) else options
        text: dict[str, str] = {}
        for key, value in pairs:
            if not isinstance(key, str) or not isinstance(value, str):
                raise InvalidScanSpec(f"option {key!r}: option names and values must be text")
            name = key.strip().lower()
            if name in text:
                raise InvalidScanSpec(f"option '{key}' is given twice (names ignore case)")
            text[name] = value
        paths, table = _source(text)
        file_format = format_of(text["format"], "option 'format'") if "format" in text else None
        reader = {k: v for k, v in text.items() if k not in SCAN_KEYS}
        _check_known(reader, file_format)
        values: dict[str, Any] = {"paths": paths, "table": table, "format": file_format}
        for option in SCAN_OPTIONS:
            if option.name in text and option.name not in values:
                values[option.name] = option.kind.read(f"option '{option.name}'", text[option.name])
        return cls(**_given(values), reader=reader)

    @classmethod
    def from_keywords(
        cls, keywords: Mapping[str, Any], reader: Mapping[str, str] | None = None
    ) -> ScanOptions:
        """The options of ``scan()``'s keyword arguments; None is an option's default.

        Reader options are kept as given: the spec checks them.
        """
        unknown = sorted(set(keywords) - {option.name for option in SCAN_OPTIONS})
        if unknown:
            raise InvalidScanSpec(f"{unknown[0]} is not an option of a scan")
        values = {
            option.name: option.kind.read(option.name, keywords[option.name])
            for option in SCAN_OPTIONS
            if keywords.get(option.name) is not None
        }
        text = {str(k): str(v) for k, v in (reader or {}).items()}
        return cls(**_given(values), reader=text)

    @classmethod
    def from_message(cls, message: Any) -> ScanOptions:
        """The options of the plugin's ``Scan`` message; unset fields are defaults."""
        values = {}
        for option in SCAN_OPTIONS:
            taken = option.kind.take(message, option.field)
            values[option.name] = option.kind.read(option.name, taken)
        return cls(**_given(values), reader=dict(message.options))

    def to_message(self, message: Any) -> None:
        """Write these options into a ``Scan`` message (a ``DataType`` schema, not Arrow)."""
        for option in SCAN_OPTIONS:
            option.kind.put(message, option.field, getattr(self, option.name))
        message.options.update(self.reader)

    def for_table(
        self, location: str, file_format: Format, reader: Mapping[str, str]
    ) -> ScanOptions:
        """The options of a ``table`` scan once its files are known, as ``scan(table=...)`` reads.

        The table's reader options come first (the scan's own win) and its
        ``k=v`` folders are typed columns (hive partitioning).
        """
        return replace(
            self,
            paths=(location,),
            format=file_format,
            table=None,
            partitioning=Partitioning.HIVE,
            reader={**reader, **self.reader},
        )

    def to_spec(
        self, provided_schema: pa.Schema | None = None, file_filter: FileFilter | None = None
    ) -> ScanSpec:
        """The ``ScanSpec``; ``provided_schema`` is ``schema`` once Spark parsed it.

        ``file_filter`` is what the gateway learnt of the query's filter
        above the scan: no user option, so not in the table.
        """
        if provided_schema is None and isinstance(self.schema, pa.Schema):
            provided_schema = self.schema
        if self.table is not None or self.format is None:
            raise InvalidScanSpec(
                f"the scan of table [{self.table}] needs the table's files first (for_table)"
            )
        columns = self.columns
        if self.schema_columns and provided_schema is not None:
            columns = tuple(provided_schema.names)
        return ScanSpec(
            paths=self.paths,
            format=self.format,
            columns=columns,
            provided_schema=provided_schema,
            strict=self.strict,
            evolution=self.evolution,
            on_error=self.on_error,
            partitioning=self.partitioning,
            rescued_column=self.rescued_column,
            compression=self.compression,
            options=dict(self.reader),
            max_rows=DEFAULT_MAX_ROWS if self.max_rows is None else self.max_rows,
            max_bytes=DEFAULT_MAX_BYTES if self.max_bytes is None else self.max_bytes,
            sample_bytes=DEFAULT_SAMPLE_BYTES if self.sample_bytes is None else self.sample_bytes,
            rejects_table=self.rejects_table,
            missing_columns=self.missing_columns,
            file_filter=file_filter,
        )


def _rows() -> tuple[ScanOption, ...]:
    rows = []
    for each in fields(ScanOptions):
        if _ROW in each.metadata:
            kind, message_field, doc = each.metadata[_ROW]
            rows.append(ScanOption(each.name, kind, message_field, doc, each.default))
    return tuple(rows)


SCAN_OPTIONS = _rows()
"""The table of options, in the order ``scan()`` and the docs list them."""

SCAN_KEYS = frozenset({option.name for option in SCAN_OPTIONS} | {"path"})
"""Option names of the scan itself; any other option is a reader option of the format."""


def _source(text: Mapping[str, str]) -> tuple[tuple[str, ...], str | None]:
    """The paths, or the table, the options name (exactly one of the two)."""
    given = [name for name in ("path", "paths", "table") if name in text]
    if len(given) > 1:
        raise InvalidScanSpec(
            "give the files in one of option 'path', 'paths' or 'table', not "
            + " and ".join(f"'{name}'" for name in given)
        )
    if not given:
        raise InvalidScanSpec(
            "option 'path' is missing: the files, directory or glob to scan (or option "
            "'table': a table to scan)"
        )
    if "table" in text:
        table = text["table"].strip()
        if not table:
            raise InvalidScanSpec("option 'table' must name a table, got ''")
        if "format" in text:
            raise InvalidScanSpec(
                "option 'format' does not go with option 'table': the table's own format is read"
            )
        return (), table
    if "format" not in text:
        raise InvalidScanSpec(f"option 'format' is missing: {Format.either()}")
    if "path" in text:
        return (text["path"],), None
    return tuple(path.strip() for path in text["paths"].split(",") if path.strip()), None


def _check_known(reader: Mapping[str, str], file_format: Format | None) -> None:
    """Every option that is not the scan's own is one of the format's reader or the store's."""
    formats = [ensure_format(file_format)] if file_format is not None else FORMAT_CLASSES.values()
    known = set(SCAN_KEYS) | set(S3_OPTIONS)
    for each in formats:
        known |= each.option_names
    scans = "" if file_format is None else f" of {file_format} files"
    for key in reader:
        if key not in known:
            raise InvalidScanSpec(
                f"option '{key}' is not an option of a scan{scans}; the options are "
                + ", ".join(sorted(known))
            )


def _given(values: Mapping[str, Any]) -> dict[str, Any]:
    """The values that are not None: an option left out keeps its default."""
    return {name: value for name, value in values.items() if value is not None}


__all__ = [
    "SCAN_KEYS",
    "SCAN_OPTIONS",
    "Compression",
    "Evolution",
    "Format",
    "MissingColumns",
    "OnError",
    "Partitioning",
    "ScanChoice",
    "ScanOption",
    "ScanOptions",
    "boolean",
    "choice",
    "column_list",
    "whole_number",
]
