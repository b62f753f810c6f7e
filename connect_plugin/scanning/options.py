"""The one place where option text becomes a scan: ``ScanOptions``.

Strings exist only at the edges: the client's keyword arguments, the proto
and the text options a SQL ``OPTIONS (...)`` clause gives. Each edge hands
its text to ``choice`` (one value) or ``ScanOptions.parse`` (a whole map of
options), and every error names the option and what it takes. The choices
themselves are the enums of ``connect_plugin.scanning.choices``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import pyarrow as pa

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
from connect_plugin.scanning.formats import FORMAT_CLASSES, Format, ensure_format, format_of
from connect_plugin.scanning.loader import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS
from connect_plugin.scanning.spec import DEFAULT_SAMPLE_BYTES, ScanSpec
from connect_plugin.scanning.storage import S3_OPTIONS


def column_list(option: str, text: str) -> tuple[str, ...]:
    """``'a, b, columns[1]'`` as names; ``'*'`` is the wildcard, empty text no columns."""
    if not text.strip():
        return ()
    names = tuple(name.strip() for name in text.split(","))
    if any(not name for name in names):
        raise InvalidScanSpec(f"{option} has an empty name in {text!r}; separate names by commas")
    return names


SCAN_KEYS = frozenset(
    {
        "path", "paths", "table", "format", "columns", "schema", "strict", "evolution",
        "on_error", "partitioning", "rescued_column", "compression", "max_rows", "max_bytes",
        "sample_bytes", "rejects_table", "missing_columns",
    }
)  # fmt: skip
"""Option names of the scan itself; any other option is a reader option of the format."""


@dataclass(frozen=True)
class ScanOptions:
    """A scan described by text options, as a SQL ``OPTIONS (...)`` clause gives them.

    The files are ``paths`` with ``format``, or ``table`` (a temporary or
    catalog table, whose location and format the gateway looks up:
    ``for_table``). ``schema`` stays DDL text: only Spark parses DDL, so the
    caller turns it into an Arrow schema before building the ``ScanSpec``.
    ``reader`` holds the options of the format's reader and the object
    store's, checked when the spec is built.
    """

    paths: tuple[str, ...] = ()
    format: Format | None = None
    table: str | None = None
    columns: tuple[str, ...] | None = None
    schema: str | None = None
    strict: bool = False
    evolution: Evolution | None = None
    on_error: OnError = OnError.FAIL
    partitioning: Partitioning = Partitioning.DIRS
    rescued_column: str | None = None
    compression: Compression = Compression.AUTO
    max_rows: int | None = None
    max_bytes: int | None = None
    sample_bytes: int | None = None
    rejects_table: str | None = None
    missing_columns: MissingColumns = MissingColumns.NULL
    reader: Mapping[str, str] = field(default_factory=dict)

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
        file_format = None
        if "format" in text:
            file_format = format_of(text["format"], "option 'format'")
        reader = {k: v for k, v in text.items() if k not in SCAN_KEYS}
        _check_known(reader, file_format)
        columns = text.get("columns")
        numbers = {
            name: whole_number(f"option '{name}'", text[name])
            for name in ("max_rows", "max_bytes", "sample_bytes")
            if name in text
        }
        evolution = text.get("evolution")
        return cls(
            paths=paths,
            format=file_format,
            table=table,
            columns=None if columns is None else _projection(column_list("option 'columns'", columns)),
            schema=text.get("schema") or None,
            strict=boolean("option 'strict'", text.get("strict", "false")),
            evolution=None if evolution is None else choice("option 'evolution'", evolution, Evolution),
            on_error=choice("option 'on_error'", text.get("on_error", "fail"), OnError),
            partitioning=choice(
                "option 'partitioning'", text.get("partitioning", "dirs"), Partitioning
            ),
            rescued_column=text.get("rescued_column") or None,
            compression=choice("option 'compression'", text.get("compression", "auto"), Compression),
            max_rows=numbers.get("max_rows"),
            max_bytes=numbers.get("max_bytes"),
            sample_bytes=numbers.get("sample_bytes"),
            rejects_table=text.get("rejects_table") or None,
            missing_columns=choice(
                "option 'missing_columns'", text.get("missing_columns", "null"), MissingColumns
            ),
            reader=reader,
        )

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

    def to_spec(self, provided_schema: pa.Schema | None = None) -> ScanSpec:
        """The ``ScanSpec``; ``provided_schema`` is ``schema`` once Spark parsed the DDL."""
        if self.table is not None or self.format is None:
            raise InvalidScanSpec(
                f"the scan of table [{self.table}] needs the table's files first (for_table)"
            )
        return ScanSpec(
            paths=self.paths,
            format=self.format,
            columns=self.columns,
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
        )


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


def _projection(names: Sequence[str]) -> tuple[str, ...] | None:
    return None if tuple(names) == ("*",) else tuple(names)


__all__ = [
    "Compression",
    "Evolution",
    "Format",
    "MissingColumns",
    "OnError",
    "Partitioning",
    "ScanChoice",
    "ScanOptions",
    "boolean",
    "choice",
    "column_list",
    "whole_number",
]
