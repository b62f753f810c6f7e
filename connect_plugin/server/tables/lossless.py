"""What each temp-table format holds exactly, and the options that make it so.

Spark's defaults lose data in text formats: json and csv write timestamps to
the millisecond, csv splits a string with a line break into two rows, reads
an empty string back as NULL and trims spaces, json reads a map with integer
keys into a table that cannot be read. A temp table is read back only
through a view the gateway makes, so the gateway picks the options Spark
writes the files with and the view reads them with (the same map: an INSERT
into the view writes with the view's options), and refuses, before anything
is written, a column whose type a format cannot hold exactly. Values a
format cannot hold within a type it holds are the business of
``value_checks``.

Every choice here was checked against Spark 4.3 by writing and reading back.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    CharType,
    DataType,
    MapType,
    StructField,
    StructType,
    UserDefinedType,
    VarcharType,
)

from connect_plugin.config import TEMP_TABLE_FORMATS
from connect_plugin.errors import TempTableError

TIMESTAMP_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXXXX"
"""Microseconds, and an offset with seconds (``XXXXX``): local mean time offsets
such as -07:52:58 have them."""
TIMESTAMP_NTZ_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"
NULL_MARKER_PREFIX = "\\N"
"""A csv table writes NULL as this followed by random hex digits of its own: csv
has no NULL, and Spark's default (an empty field) is also how it reads ``''``."""

_COMMON = {
    # Partition values of TIMESTAMP columns are written in and read back in this
    # zone, and json/csv timestamps carry it; the session's zone may change between.
    "timeZone": "UTC",
}
_TEXT_VALUES = {
    "timestampFormat": TIMESTAMP_FORMAT,
    "timestampNTZFormat": TIMESTAMP_NTZ_FORMAT,
    "dateFormat": "yyyy-MM-dd",
    "encoding": "UTF-8",
    "locale": "en-US",
    # A record that does not read as written is an error, never a row of NULLs.
    "mode": "FAILFAST",
}
_CSV = {
    "multiLine": "true",
    "lineSep": "\n",
    "quote": '"',
    "escape": '"',
    "charToEscapeQuoteEscaping": '"',
    "ignoreLeadingWhiteSpace": "false",
    "ignoreTrailingWhiteSpace": "false",
    "nanValue": "NaN",
    "positiveInf": "Infinity",
    "negativeInf": "-Infinity",
}
_PARQUET = {
    # Spark writes TIMESTAMP as the session says: to the millisecond under
    # TIMESTAMP_MILLIS, as INT96 (nanoseconds in Julian days, which pyarrow and
    # other readers take for nanoseconds since the epoch and overflow outside
    # 1677-2262) by default. A write's own option wins over the session from
    # Spark 4.2 on (SPARK-56414), in CTTAS and in an INSERT into the view alike.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}
_CHOSEN: dict[str, dict[str, str]] = {
    "parquet": {**_COMMON, **_PARQUET},
    "orc": dict(_COMMON),
    "json": {**_COMMON, **_TEXT_VALUES},
    "csv": {**_COMMON, **_TEXT_VALUES, **_CSV},
    "text": dict(_COMMON),
}

_ANY_FORMAT_OPTIONS = frozenset(("compression", "codec", "maxrecordsperfile"))
_USER_OPTIONS = {
    "parquet": _ANY_FORMAT_OPTIONS,
    "orc": _ANY_FORMAT_OPTIONS,
    "json": _ANY_FORMAT_OPTIONS,
    "csv": _ANY_FORMAT_OPTIONS | {"header", "sep", "delimiter"},
    "text": _ANY_FORMAT_OPTIONS,
}
"""Options a user may give (lower case): they change how files are laid out, never a value."""
_USER_PREFIXES = {"parquet": ("parquet.",), "orc": ("orc.bloom.filter", "orc.compress")}
_GATEWAY_PREFIX = "connect_plugin."
"""Options the gateway itself records on a table (a rejects table's scan)."""
_BAD_SEPARATORS = frozenset('"\r\n')

_FLAT_ONLY = "csv holds only flat columns"
_NOT_IN_FILES = "Spark cannot write it to files; cast it to a string or an ANSI interval"
_NOT_HELD: dict[str, dict[str, str]] = {
    "parquet": {"interval": _NOT_IN_FILES},
    "orc": {
        "interval": _NOT_IN_FILES,
        "void": "orc has no type for it",
        "map": "orc sorts a map's entries by key, so their order changes",
        "variant": "orc has no variant type",
        "geometry": "orc has no geometry type",
        "geography": "orc has no geography type",
    },
    "json": {
        "interval": _NOT_IN_FILES,
        "variant": "a variant comes back as plain JSON: its dates, timestamps, binary and "
        "decimals change type",
        "geometry": "json has no geometry type",
        "geography": "json has no geography type",
    },
    "csv": {
        "interval": _NOT_IN_FILES,
        "binary": "csv writes the bytes as text",
        "void": "csv has no type for it",
        "variant": _FLAT_ONLY,
        "geometry": _FLAT_ONLY,
        "geography": _FLAT_ONLY,
        "array": _FLAT_ONLY,
        "map": _FLAT_ONLY,
        "struct": _FLAT_ONLY,
    },
}
_ORC_BACKTICK = (
    "orc loses a column or struct field whose name has a backtick (`): it reads back NULL"
)
_PARTITION_NOT_HELD = {
    "binary": "Spark cannot write binary partition values",
    "void": "a partition column needs a type",
    "variant": "a partition column must be flat",
    "geometry": "a partition column must be flat",
    "geography": "a partition column must be flat",
    "array": "a partition column must be flat",
    "map": "a partition column must be flat",
    "struct": "a partition column must be flat",
    "interval": _NOT_IN_FILES,
}


def kind(data_type: DataType) -> str:
    """The name the rules use for a type: its Spark name without parameters (char and
    varchar are strings in files)."""
    if isinstance(data_type, UserDefinedType):
        return kind(data_type.sqlType())
    if isinstance(data_type, (CharType, VarcharType)):
        return "string"
    return data_type.typeName()


def why_not_held(fmt: str, data_type: DataType, name: str = "") -> str | None:
    """Why ``fmt`` cannot hold every value of a column ``name`` of ``data_type`` (None when
    it can)."""
    if isinstance(data_type, UserDefinedType):
        return why_not_held(fmt, data_type.sqlType(), name)
    if fmt == "orc" and "`" in name:
        return _ORC_BACKTICK
    if fmt == "text":
        return None if kind(data_type) == "string" else "text holds one string column"
    reason = _NOT_HELD[fmt].get(kind(data_type))
    if reason is not None:
        return reason
    if isinstance(data_type, ArrayType):
        return why_not_held(fmt, data_type.elementType)
    if isinstance(data_type, MapType):
        if fmt == "json" and kind(data_type.keyType) != "string":
            return "json map keys are strings"
        return why_not_held(fmt, data_type.keyType) or why_not_held(fmt, data_type.valueType)
    if isinstance(data_type, StructType):
        for field in data_type.fields:
            reason = why_not_held(fmt, field.dataType, field.name)
            if reason is not None:
                return reason
    return None


def holders(data_type: DataType, name: str = "") -> list[str]:
    """The formats that hold every value of a column ``name`` of ``data_type``."""
    return [f for f in TEMP_TABLE_FORMATS if why_not_held(f, data_type, name) is None]


@dataclass(frozen=True)
class Layout:
    """How a temp table's files are written and read: the options of its write and view."""

    format: str
    options: dict[str, str]


def layout(
    name: str,
    fmt: str,
    written: StructType,
    partition_columns: Sequence[str],
    user_options: Mapping[str, str],
) -> Layout:
    """The options a table is written and read with, once its columns are known to fit.

    Raises ``TempTableError`` naming the column, its type and the formats that
    hold it, or the option the user may not choose, before anything is written.
    """
    partitions = {c.lower() for c in partition_columns}
    for field in written.fields:
        _check_column(name, fmt, field, partition=field.name.lower() in partitions)
    options = dict(_CHOSEN[fmt])
    if fmt == "csv":
        options["nullValue"] = NULL_MARKER_PREFIX + secrets.token_hex(8)
    for key, value in user_options.items():
        _check_option(name, fmt, key, value)
        options[key] = value
    return Layout(fmt, options)


def _check_column(name: str, fmt: str, field: StructField, *, partition: bool) -> None:
    shown = field.dataType.simpleString()
    if partition:
        reason = _PARTITION_NOT_HELD.get(kind(field.dataType))
        if reason is not None:
            raise TempTableError(
                f"Temporary table [{name}] was not created: partition column [{field.name}] "
                f"of type {shown} cannot be held exactly ({reason}); partition by a column of "
                "another type, or keep it as a data column"
            )
        if field.name.startswith("."):
            raise TempTableError(
                f"Temporary table [{name}] was not created: partition column [{field.name}] "
                "cannot be held: its folders' names would start with a dot, and Spark takes "
                "such folders for hidden ones, so its rows would not read back; rename the "
                "column (AS another name), or keep it as a data column"
            )
        return
    reason = why_not_held(fmt, field.dataType, field.name)
    if reason is None:
        return
    others = [f for f in holders(field.dataType, field.name) if f != fmt]
    where = (
        f"formats that hold it: {', '.join(others)}"
        if others
        else "no temp-table format holds it; cast it to another type"
    )
    raise TempTableError(
        f"Temporary table [{name}] was not created: column [{field.name}] of type {shown} "
        f"cannot be held exactly by {fmt} ({reason}); {where}"
    )


def _check_option(name: str, fmt: str, key: str, value: str) -> None:
    lowered = key.lower()
    if lowered.startswith(_GATEWAY_PREFIX):
        return
    if lowered in _USER_OPTIONS[fmt] or lowered.startswith(_USER_PREFIXES.get(fmt, ())):
        if lowered in ("sep", "delimiter") and (len(value) != 1 or value in _BAD_SEPARATORS):
            raise TempTableError(
                f"Temporary table [{name}] was not created: option [{key}] must be one "
                "character other than a quote or a line break, so that every value reads "
                f"back as written; got [{value}]"
            )
        return
    allowed = sorted(_USER_OPTIONS[fmt]) + [p + "*" for p in _USER_PREFIXES.get(fmt, ())]
    raise TempTableError(
        f"Temporary table [{name}] was not created: option [{key}] is chosen by the gateway "
        f"for {fmt} temp tables, so that every value reads back exactly as written; options "
        f"a {fmt} temp table takes: {', '.join(allowed)}"
    )
