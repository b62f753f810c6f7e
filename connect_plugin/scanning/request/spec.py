"""What a file scan asks for, as one frozen value that can travel as a string.

The gateway builds a ``ScanSpec`` from the plugin's ``Scan`` relation and
hands it to the Spark data source as the option ``spec`` (``to_json()``);
Spark's Python workers rebuild it with ``from_json()``. Everything a scan
needs to plan and read is here, so the driver and the executors agree
without further messages. The provided schema travels as Arrow IPC bytes in
base64, which keeps every Arrow type and field metadata exactly.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import pyarrow as pa

from connect_plugin.errors import InvalidScanSpec
from connect_plugin.scanning.choices import (
    Compression,
    Evolution,
    MissingColumns,
    OnError,
    Partitioning,
    boolean,
    choice,
)
from connect_plugin.scanning.files.storage import (
    SECRET_OPTION_PREFIX,
    Storage,
    open_storage,
    options_digest,
    split_storage_options,
)
from connect_plugin.scanning.formats import (
    FileFormat,
    Format,
    FormatSettings,
    ensure_format,
    format_of,
)
from connect_plugin.scanning.loader.loader import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ROWS,
    MAX_ROWS_CEILING,
)
from connect_plugin.scanning.names import fold
from connect_plugin.scanning.request import predicates
from connect_plugin.scanning.request.predicates import FileFilter

DEFAULT_SAMPLE_BYTES = 256 * 1024
"""Bytes read from the start of each json/csv/tsv/text file to learn its columns."""

DEFAULT_RESCUED_COLUMN = "_rescued_data"
"""The rescued-data column of ``evolution="rescue"`` when none is named, as in Auto Loader."""

DEFAULT_REJECTS_TABLE = "reject_errors"
"""The temp table of ``on_error="reject"`` when none is named, as DuckDB's ``rejects_table``."""

_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_PLAIN = (Compression.AUTO, Compression.NONE)

SPEC_VERSION = 1

INDEXED_NAME = re.compile(r"^(?P<base>.+)\[(?P<index>\d+)\]$")
"""``name[n]``: element ``n`` of a list column, as in Drill's ``columns[2]``."""


@dataclass(frozen=True)
class ScanSpec:
    """A schema-on-read scan of files.

    ``columns`` is ``None`` (or ``["*"]``) for every column, ``[]`` for none
    (row counts only), or the projection list: table columns, nested members
    (``m.a``), list elements (``columns[2]``), implicit file columns
    (``filename``, ``filepath``, ``fqn``, ``suffix``) and partition columns
    (``dir0``, ``dir1``, ...); ``"*"`` inside a longer list stands for the
    wildcard expansion. ``options`` are reader options, with case-insensitive
    keys (``json_format`` for json; ``header``, ``delimiter``, ``quote``,
    ``escape``, ``nullValue``, ``multiLine`` for csv/tsv; ``delimiter`` for
    text).

    The choices may be given as their words (``on_error="skip"``); they are
    kept as the enums of ``connect_plugin.scanning.choices``. ``strict=True``
    is another way to write ``evolution="none"``.
    """

    paths: Sequence[str]
    format: Format
    columns: Sequence[str] | None = None
    provided_schema: pa.Schema | None = None
    strict: bool = False
    partitioning: Partitioning = Partitioning.DIRS
    on_error: OnError = OnError.FAIL
    max_rows: int = DEFAULT_MAX_ROWS
    max_bytes: int = DEFAULT_MAX_BYTES
    options: Mapping[str, str] = field(default_factory=dict)
    sample_bytes: int = DEFAULT_SAMPLE_BYTES
    evolution: Evolution | None = None
    rescued_column: str | None = None
    compression: Compression = Compression.AUTO
    storage_options: Mapping[str, str] = field(default_factory=dict, repr=False)
    """``s3.*`` options (``options`` may hold them too): secrets, kept out of JSON and repr."""
    rejects_table: str | None = None
    """The temp table of ``on_error="reject"`` (``reject_errors`` when not named)."""
    rejects_folder: str | None = None
    """Where Spark's workers write the rejects, one parquet file per file read; the gateway sets it."""
    missing_columns: MissingColumns = MissingColumns.NULL
    """What a projected column found in no file and not in the schema gives."""
    file_filter: FileFilter | None = None
    """What the query's filter says of partition and file columns: files it rules out are
    not opened. The gateway sets it from the ``Filter`` above the scan."""

    def __post_init__(self) -> None:
        set_field = object.__setattr__
        set_field(self, "paths", _paths(self.paths))
        set_field(self, "format", format_of(self.format))
        set_field(self, "columns", _columns(self.columns))
        set_field(self, "provided_schema", _schema(self.provided_schema))
        set_field(self, "partitioning", choice("partitioning", self.partitioning, Partitioning))
        set_field(self, "on_error", choice("on_error", self.on_error, OnError))
        set_field(
            self,
            "missing_columns",
            choice("missing_columns", self.missing_columns, MissingColumns),
        )
        reader, storage = split_storage_options(_text_map(self.options))
        _, more_storage = split_storage_options(_text_map(self.storage_options))
        set_field(self, "options", ensure_format(self.format).check_options(reader))
        set_field(self, "storage_options", {**storage, **more_storage})
        set_field(self, "compression", choice("compression", self.compression, Compression))
        if not ensure_format(self.format).compressible and self.compression not in _PLAIN:
            raise InvalidScanSpec(
                f"compression='{self.compression}' does not apply to {self.format} files, "
                "which compress their own pages; leave compression at auto"
            )
        strict = boolean("strict", self.strict)
        evolution = _evolution(self.evolution, strict)
        set_field(self, "evolution", evolution)
        set_field(self, "strict", evolution is Evolution.NONE)
        set_field(self, "rescued_column", _rescued_column(self.rescued_column, evolution))
        set_field(self, "rejects_table", _rejects_table(self.rejects_table, self.on_error))
        if not _is_int(self.max_rows) or not 1 <= self.max_rows <= MAX_ROWS_CEILING:
            raise InvalidScanSpec(
                f"max_rows must be a whole number from 1 to {MAX_ROWS_CEILING}, "
                f"got {self.max_rows!r}"
            )
        for name in ("max_bytes", "sample_bytes"):
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                raise InvalidScanSpec(f"{name} must be a positive number of bytes, got {value!r}")

    def __hash__(self) -> int:
        return hash(self.to_json())

    @property
    def schema_evolution(self) -> Evolution:
        """The evolution mode, never None (``__post_init__`` settles it)."""
        assert self.evolution is not None
        return self.evolution

    @cached_property
    def scan_id(self) -> str:
        """A hash of what decides a scan's records and rejects (not batch limits, the folder,
        nor the files a query's filter prunes).

        Reading the same scan again (another action on the same DataFrame, a
        filtered copy of it in the same query or a later one) gives the same
        rejects file names, so its rejects replace, not repeat, the ones before.
        """
        data = self.to_dict()
        del data["max_rows"], data["max_bytes"], data["rejects_folder"], data["file_filter"]
        data["storage"] = options_digest(self.storage_options)
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    @property
    def is_wildcard(self) -> bool:
        """Whether the projection holds the wildcard (alone or among other names)."""
        return self.columns is None or "*" in self.columns

    @cached_property
    def storage(self) -> Storage:
        """The file system of the scan's paths, opened once and kept with the spec."""
        return open_storage(self.paths, self.storage_options)

    def secret_options(self) -> dict[str, str]:
        """The storage options as data source options Spark redacts (their names say secret)."""
        return {SECRET_OPTION_PREFIX + key: value for key, value in self.storage_options.items()}

    @staticmethod
    def storage_from_options(options: Mapping[str, str]) -> dict[str, str]:
        """The storage options among data source options made by ``secret_options``."""
        prefix = SECRET_OPTION_PREFIX
        return {k[len(prefix) :]: v for k, v in options.items() if k.lower().startswith(prefix)}

    @cached_property
    def file_format(self) -> FileFormat:
        """The format object of this spec, built once and kept with it."""
        return ensure_format(self.format)(self.format_settings)

    @property
    def format_settings(self) -> FormatSettings:
        """What the format reads of the spec: how to open and parse files, not what to keep."""
        return FormatSettings(
            storage=self.storage,
            options=self.options,
            compression=self.compression,
            sample_bytes=self.sample_bytes,
            max_rows=self.max_rows,
            has_schema=self.provided_schema is not None,
        )

    @property
    def has_header(self) -> bool:
        """Whether csv/tsv files start with a header line naming their columns."""
        return self.file_format.has_header

    def option(self, name: str, default: str | None = None) -> str | None:
        return self.options.get(name.lower(), default)

    def to_dict(self) -> dict[str, Any]:
        schema = self.provided_schema
        return {
            "version": SPEC_VERSION,
            "paths": list(self.paths),
            "format": self.format.value,
            "columns": None if self.columns is None else list(self.columns),
            "schema": None if schema is None else _schema_to_text(schema),
            "strict": self.strict,
            "evolution": self.schema_evolution.value,
            "partitioning": self.partitioning.value,
            "on_error": self.on_error.value,
            "max_rows": self.max_rows,
            "max_bytes": self.max_bytes,
            "options": dict(self.options),
            "sample_bytes": self.sample_bytes,
            "rescued_column": self.rescued_column,
            "compression": self.compression.value,
            "rejects_table": self.rejects_table,
            "rejects_folder": self.rejects_folder,
            "missing_columns": self.missing_columns.value,
            "file_filter": None if self.file_filter is None else predicates.to_json(self.file_filter),
        }

    def to_json(self) -> str:
        """The spec as a JSON string, for the data source option ``spec``."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, storage_options: Mapping[str, str] | None = None) -> ScanSpec:
        """The spec of ``to_json()``; storage options travel apart, as they are secrets."""
        spec = cls._from_json(text)
        if storage_options:
            return replace(spec, storage_options=dict(storage_options))
        return spec

    @classmethod
    def _from_json(cls, text: str) -> ScanSpec:
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise InvalidScanSpec(f"the scan spec is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise InvalidScanSpec("the scan spec must be a JSON object")
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScanSpec:
        known = {
            "version", "paths", "format", "columns", "schema", "strict", "partitioning",
            "on_error", "max_rows", "max_bytes", "options", "sample_bytes", "evolution",
            "rescued_column", "compression", "rejects_table", "rejects_folder", "file_filter",
            "missing_columns",
        }  # fmt: skip
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidScanSpec(
                f"the scan spec has unknown keys {unknown}; known keys: {sorted(known)}"
            )
        version = data.get("version", SPEC_VERSION)
        if version != SPEC_VERSION:
            raise InvalidScanSpec(
                f"the scan spec has version {version!r}, this connect-plugin reads version "
                f"{SPEC_VERSION}; use the same connect-plugin version on gateway and server"
            )
        if "paths" not in data or "format" not in data:
            raise InvalidScanSpec("the scan spec needs 'paths' and 'format'")
        schema_text = data.get("schema")
        arguments = {
            key: data[key] for key in known - {"version", "schema", "file_filter"} if key in data
        }
        if data.get("file_filter") is not None:
            arguments["file_filter"] = predicates.from_json(data["file_filter"])
        if arguments.get("strict") and arguments.get("evolution") == Evolution.NONE.value:
            del arguments["strict"]
        schema = None if schema_text is None else _schema_from_text(schema_text)
        return cls(provided_schema=schema, **arguments)

    def cache_key(self) -> str:
        """What decides the table schema: the spec without its projection and batch limits."""
        data = self.to_dict()
        for unused in ("max_rows", "max_bytes", "columns", "rejects_folder", "file_filter"):
            del data[unused]
        data["storage"] = options_digest(self.storage_options)
        return json.dumps(data, sort_keys=True, separators=(",", ":"))


def _evolution(value: object, strict: bool) -> Evolution:
    if value is None:
        return Evolution.NONE if strict else Evolution.ADD_NEW_COLUMNS
    evolution = choice("evolution", value, Evolution)
    if strict and evolution is not Evolution.NONE:
        raise InvalidScanSpec(
            f"strict=True means evolution='none', which contradicts evolution='{evolution}'; "
            "give one of the two"
        )
    return evolution


def _rescued_column(value: object, evolution: Evolution) -> str | None:
    if value is None or value == "":
        return DEFAULT_RESCUED_COLUMN if evolution is Evolution.RESCUE else None
    if not isinstance(value, str) or value != value.strip() or not value:
        raise InvalidScanSpec(f"rescued_column must be a column name, got {value!r}")
    if value == "*" or "[" in value or "." in value:
        raise InvalidScanSpec(
            f"rescued_column {value!r} must be a plain name (no '*', '.', or '[')"
        )
    return value


def _rejects_table(value: object, on_error: OnError) -> str | None:
    if value is None or value == "":
        return DEFAULT_REJECTS_TABLE if on_error is OnError.REJECT else None
    if on_error is not OnError.REJECT:
        raise InvalidScanSpec(
            f"rejects_table={value!r} needs on_error='reject' (got on_error='{on_error}'); "
            "scan with on_error='reject' to keep bad records in a table"
        )
    if not isinstance(value, str) or _TABLE_NAME.match(value) is None:
        raise InvalidScanSpec(
            f"rejects_table must be a plain table name (letters, digits, '_'), got {value!r}"
        )
    return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _paths(paths: object) -> tuple[str, ...]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not isinstance(paths, Sequence) or not paths:
        raise InvalidScanSpec("a scan needs at least one path or glob in paths")
    result = []
    for path in paths:
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if not isinstance(path, str) or not path.strip():
            raise InvalidScanSpec(f"paths must be non-empty strings; got {path!r}")
        result.append(path)
    return tuple(result)


def _columns(columns: object) -> tuple[str, ...] | None:
    if columns is None:
        return None
    if isinstance(columns, str) or not isinstance(columns, Sequence):
        raise InvalidScanSpec(
            f"columns must be a list of column names, None or ['*']; got {columns!r}"
        )
    seen: dict[str, str] = {}
    for name in columns:
        if not isinstance(name, str) or not name.strip():
            raise InvalidScanSpec(f"column names must be non-empty strings; got {name!r}")
        if name != name.strip():
            raise InvalidScanSpec(f"column name {name!r} has leading or trailing spaces")
        key = fold(name)
        if key in seen:
            raise InvalidScanSpec(
                f"column '{name}' is named twice in the projection (as '{seen[key]}' too); "
                "names are compared without case, so list each column once"
            )
        seen[key] = name
        match = INDEXED_NAME.match(name)
        if "[" in name and match is None:
            raise InvalidScanSpec(
                f"column '{name}' is malformed; an element is written as name[n], e.g. columns[0]"
            )
    result = tuple(columns)
    return None if result == ("*",) else result


def _schema(schema: object) -> pa.Schema | None:
    if schema is None:
        return None
    if not isinstance(schema, pa.Schema):
        raise InvalidScanSpec(
            f"provided_schema must be a pyarrow.Schema, got {type(schema).__name__}"
        )
    seen: dict[str, str] = {}
    for name in schema.names:
        key = fold(name)
        if key in seen:
            raise InvalidScanSpec(
                f"the provided schema has column '{name}' twice (as '{seen[key]}' too); "
                "names are compared without case"
            )
        seen[key] = name
    return schema


def _text_map(options: object) -> dict[str, str]:
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise InvalidScanSpec(f"options must map option names to strings; got {options!r}")
    for key, value in options.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidScanSpec(f"option {key!r}: option names and values must be strings")
    return dict(options)


def _schema_to_text(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def _schema_from_text(text: object) -> pa.Schema:
    if not isinstance(text, str):
        raise InvalidScanSpec("the scan spec's schema must be base64 text of an Arrow IPC schema")
    try:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text, validate=True)))
    except (binascii.Error, pa.ArrowException, ValueError) as exc:
        raise InvalidScanSpec(
            f"the scan spec's schema is not base64 of an Arrow IPC schema: {exc}"
        ) from exc
