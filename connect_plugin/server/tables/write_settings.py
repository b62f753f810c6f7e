"""Session settings that would change what a parquet temp table's files hold, refused.

Spark writes parquet as the session's settings say, and three of them
change values on the way: ``spark.sql.parquet.outputTimestampType`` set to
``TIMESTAMP_MILLIS`` cuts a TIMESTAMP to the millisecond;
``spark.sql.parquet.datetimeRebaseModeInWrite`` set to ``LEGACY`` writes
dates before 1582-10-15 and timestamps before 1900 in the Julian calendar,
and ``spark.sql.parquet.int96RebaseModeInWrite`` does so for INT96
timestamps. Spark reads rebased files back right (it marks them), but the
gateway's own reader (``scan(table=...)``, pyarrow) and every other reader
see the Julian values.

The gateway's own writes (CTTAS and every rewrite) carry
``TIMESTAMP_MICROS`` as an option of the table (``lossless``), which wins
over the session from Spark 4.2 on (SPARK-56414). An INSERT is Spark's write
into the table's view, and Spark hands the view's options to its writer
with their keys lower-cased, where the writer does not find them: it
writes timestamps as the session says. The rebase modes Spark's writer
takes from the session alone. So a write that one of these settings would
change is refused before anything is written, naming the table, the column,
the setting and what to do. The settings are read when the statement
starts: a client that changes them while its own statement runs races
itself. One more value does not survive the session's default,
``INT96``: a timestamp after 287564-12-03 04:00:54.775807 UTC, where
Spark's INT96 writer overflows; an INSERT that writes INT96 checks its rows
for it (``value_checks.int96_rules``).
"""

from __future__ import annotations

import json

from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.types import ArrayType, DataType, MapType, StructType, UserDefinedType

from connect_plugin.errors import ValueNotHeld
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.tables.lossless import kind
from connect_plugin.server.tables.value_checks import Rule, int96_rules
from connect_plugin.server.transport.upstream import UpstreamSession

TIMESTAMP_TYPE = "spark.sql.parquet.outputTimestampType"
DATETIME_REBASE = "spark.sql.parquet.datetimeRebaseModeInWrite"
INT96_REBASE = "spark.sql.parquet.int96RebaseModeInWrite"
_SPARK_DEFAULTS = {TIMESTAMP_TYPE: "INT96", DATETIME_REBASE: "CORRECTED", INT96_REBASE: "CORRECTED"}
_OPTIONS_WIN_FROM = (4, 2)
"""The first Spark whose parquet writer takes a write's options over the session's settings."""
_TIME_KINDS = frozenset(("date", "timestamp"))
_JULIAN = (
    "it writes dates before 1582-10-15 and timestamps before 1900 in the Julian calendar, "
    "which only Spark reads back right"
)


async def refuse_changing_settings(
    upstream: UpstreamSession, table: TempTable, *, by_spark: bool
) -> list[Rule]:
    """Raise ``ValueNotHeld`` when the session's settings would change ``table``'s dates or
    timestamps as they are written; else the value rules they add to the write (INT96's last
    timestamp, when Spark writes the rows as INT96).

    ``by_spark``: Spark writes the rows into the table's view (an INSERT),
    not the gateway with the table's options.
    """
    if table.format != "parquet":
        return []
    columns = _time_columns(table)
    if not columns:
        return []
    settings = await upstream.config(list(_SPARK_DEFAULTS))
    value = {
        key: (settings.get(key) or default).upper() for key, default in _SPARK_DEFAULTS.items()
    }
    timestamp_type = value[TIMESTAMP_TYPE]
    if not by_spark and timestamp_type != "TIMESTAMP_MICROS" and await _options_win(upstream):
        timestamp_type = "TIMESTAMP_MICROS"
    timestamps = [name for name, kinds in columns if "timestamp" in kinds]
    dates = [name for name, kinds in columns if "date" in kinds]
    if timestamp_type == "TIMESTAMP_MILLIS" and timestamps:
        _refuse(
            table,
            timestamps[0],
            "timestamps",
            TIMESTAMP_TYPE,
            "TIMESTAMP_MILLIS",
            "it cuts timestamps to the millisecond",
        )
    if value[DATETIME_REBASE] == "LEGACY" and dates:
        _refuse(table, dates[0], "dates", DATETIME_REBASE, "LEGACY", _JULIAN)
    if value[DATETIME_REBASE] == "LEGACY" and timestamps and timestamp_type != "INT96":
        _refuse(table, timestamps[0], "timestamps", DATETIME_REBASE, "LEGACY", _JULIAN)
    if value[INT96_REBASE] == "LEGACY" and timestamps and timestamp_type == "INT96":
        _refuse(table, timestamps[0], "timestamps", INT96_REBASE, "LEGACY", _JULIAN)
    if not (by_spark and timestamps and timestamp_type == "INT96"):
        return []
    schema = StructType.fromJson(json.loads(table.schema_json))
    advice = f'spark.conf.set("{TIMESTAMP_TYPE}", "TIMESTAMP_MICROS") holds it'
    return int96_rules(schema, table.partition_columns, advice)


def _refuse(table: TempTable, column: str, held: str, key: str, value: str, why: str) -> None:
    raise ValueNotHeld(
        f"Temporary table [{table.name}]: column [{column}] holds {held}, which parquet "
        f"does not hold exactly while the session's {key} is {value} ({why}); nothing was "
        f'written: unset it (spark.conf.unset("{key}")) and run the statement again'
    )


def _time_columns(table: TempTable) -> list[tuple[str, set[str]]]:
    """The table's data columns that hold dates or timestamps (nested too), with which;
    partition values are folder names, which no parquet setting changes."""
    schema = StructType.fromJson(json.loads(table.schema_json))
    partitions = {c.lower() for c in table.partition_columns}
    found = [(f.name, _kinds(f.dataType)) for f in schema if f.name.lower() not in partitions]
    return [(name, kinds) for name, kinds in found if kinds]


def _kinds(data_type: DataType) -> set[str]:
    if isinstance(data_type, UserDefinedType):
        return _kinds(data_type.sqlType())
    if isinstance(data_type, ArrayType):
        return _kinds(data_type.elementType)
    if isinstance(data_type, MapType):
        return _kinds(data_type.keyType) | _kinds(data_type.valueType)
    if isinstance(data_type, StructType):
        return set().union(*(_kinds(f.dataType) for f in data_type.fields))
    return {kind(data_type)} & _TIME_KINDS


async def _options_win(upstream: UpstreamSession) -> bool:
    """Whether the Spark server takes a parquet write's options over the session's settings."""
    request = spark_proto.AnalyzePlanRequest()
    request.spark_version.SetInParent()
    version = (await upstream.analyze(request)).spark_version.version
    numbers = tuple(int(part) for part in version.split(".")[:2] if part.isdigit())
    return numbers >= _OPTIONS_WIN_FROM
