"""A second opinion on a temp table's files: DuckDB reads the parquet or csv Spark wrote.

DuckDB knows nothing of the gateway's options beyond what a user would pass
any csv reader (quote, escape, null string, separator, header), and nothing
of Spark's own readers, so values it reads as the source's are values on
disk, not a Spark reader undoing a Spark writer's mistake. csv fields are
read as text and parsed here from the formats docs/temp-tables.md promises (ISO
timestamps with an offset, ANSI intervals, Java's shortest float forms).
Partition columns live in folder names, which DuckDB parses its own way,
and DuckDB 2 reads a parquet VARIANT as its own variant (a JSON null
becomes NULL, some of Spark's variants it cannot read): neither is compared.
"""

from __future__ import annotations

import datetime
import decimal
import re
import struct
from pathlib import Path
from typing import Any

import duckdb
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
    TimeType,
)

from tests.integration.temp_tables.roundtrip_data import (
    EPOCH,
    MICROSECOND,
    UTC,
    exact,
    has_variant,
)

_INTERVAL = re.compile(
    r"INTERVAL '(?P<sign>-?)(?P<days>\d+) (?P<h>\d+):(?P<m>\d+):(?P<s>\d+(?:\.\d+)?)' DAY TO SECOND"
)


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def parquet_rows(folder: Path, data: StructType) -> list[list[Any]]:
    """The data columns of a parquet table's files, as exact values."""
    files = sorted(str(p) for p in folder.rglob("*.parquet"))
    if not files:
        return []
    columns = ", ".join('"' + f.name.replace('"', '""') + '"' for f in data.fields)
    relation = duckdb.sql(
        f"SELECT {columns} FROM read_parquet([{', '.join(map(_quoted, files))}], "
        "hive_partitioning=false)"
    )
    result = relation.arrow()
    # DuckDB 1.x answers a table, 2.x a stream of batches.
    rows = (result.read_all() if hasattr(result, "read_all") else result).to_pylist()
    converted = [[_parquet_exact(row[f.name], f.dataType) for f in data.fields] for row in rows]
    return sorted(converted, key=lambda r: (r[0], repr(r)))


def _parquet_exact(value: Any, data_type: DataType) -> Any:
    return exact(_as_spark_sends(value, data_type), data_type)


def _as_spark_sends(value: Any, data_type: DataType) -> Any:
    """A DuckDB value in the form Spark's Arrow batches give (``exact`` takes that form).

    Spark's TIMESTAMP is parquet INT96, which DuckDB reads as a naive UTC time;
    a day-time interval is a plain INT64 of microseconds to any other reader.
    """
    if value is None:
        return None
    if isinstance(data_type, TimestampType) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    if isinstance(data_type, DayTimeIntervalType) and isinstance(value, int):
        return datetime.timedelta(microseconds=value)
    if isinstance(data_type, ArrayType):
        return [_as_spark_sends(v, data_type.elementType) for v in value]
    if isinstance(data_type, MapType):
        return [
            (_as_spark_sends(k, data_type.keyType), _as_spark_sends(v, data_type.valueType))
            for k, v in value
        ]
    if isinstance(data_type, StructType):
        return {f.name: _as_spark_sends(value[f.name], f.dataType) for f in data_type.fields}
    return value


def csv_rows(folder: Path, data: StructType, options: dict[str, str]) -> list[list[Any]]:
    """The data columns of a csv table's files, read with the table's framing options only."""
    files = sorted(str(p) for p in folder.rglob("*.csv"))
    if not files:
        return []
    columns = ", ".join(f"{_quoted(f'c{i}')}: 'VARCHAR'" for i in range(len(data.fields)))
    header = options.get("header", "false").lower() == "true"
    separator = options.get("sep", options.get("delimiter", ","))
    relation = duckdb.sql(
        f"SELECT * FROM read_csv([{', '.join(map(_quoted, files))}], header={header}, "
        f"columns={{{columns}}}, quote='\"', escape='\"', delim={_quoted(separator)}, "
        f"nullstr={_quoted(options['nullValue'])}, new_line='\\n', auto_detect=false, "
        "strict_mode=true, null_padding=false, hive_partitioning=false)"
    )
    converted = [
        [_parsed(text, f.dataType) for text, f in zip(row, data.fields, strict=True)]
        for row in relation.fetchall()
    ]
    return sorted(converted, key=lambda r: (r[0], repr(r)))


def _parsed(text: str | None, data_type: DataType) -> Any:
    """A csv field as the exact value it stands for (``exact``'s form)."""
    if text is None:
        return None
    if isinstance(data_type, BooleanType):
        assert text in ("true", "false"), text
        return text == "true"
    if isinstance(data_type, (ByteType, ShortType, IntegerType, LongType)):
        return int(text)
    if isinstance(data_type, FloatType):
        value = float(text)
        return "NaN" if value != value else ("f32", struct.pack(">f", value))
    if isinstance(data_type, DoubleType):
        value = float(text)
        return "NaN" if value != value else ("f64", struct.pack(">d", value))
    if isinstance(data_type, DecimalType):
        return exact(decimal.Decimal(text), data_type)
    if isinstance(data_type, StringType):
        return text
    if isinstance(data_type, DateType):
        return datetime.date.fromisoformat(text)
    if isinstance(data_type, TimestampType):
        # Python 3.10's fromisoformat does not take "Z".
        offset = text[:-1] + "+00:00" if text.endswith("Z") else text
        stamp = datetime.datetime.fromisoformat(offset)
        return (stamp - EPOCH) // MICROSECOND
    if isinstance(data_type, TimestampNTZType):
        return datetime.datetime.fromisoformat(text)
    if isinstance(data_type, DayTimeIntervalType):
        found = _INTERVAL.fullmatch(text)
        assert found is not None, text
        size = datetime.timedelta(
            days=int(found["days"]),
            hours=int(found["h"]),
            minutes=int(found["m"]),
            microseconds=int(decimal.Decimal(found["s"]) * 1_000_000),
        )
        return -size if found["sign"] else size
    if isinstance(data_type, TimeType):
        return datetime.time.fromisoformat(text)
    raise AssertionError(f"csv holds no {data_type}")


def compared(schema: StructType, partition: str | None) -> list[int]:
    """Positions of the columns DuckDB's reading is compared on: the files' own columns
    (partition columns are folder names), variants left out."""
    return [
        i for i, f in enumerate(schema.fields)
        if f.name != partition and not has_variant(f.dataType)
    ]  # fmt: skip
