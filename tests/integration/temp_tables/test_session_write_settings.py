"""Session settings that change how Spark writes files do not change a temp table's values.

A client may set any of Spark's write settings on its session
(``spark.conf.set``); the gateway writes a temp table's files with options
of its own that win over them, so that the table holds what it was given
and the gateway's own reader (``scan(table=...)``, pyarrow) reads the files
as Spark does. Each test reads back through Spark and through the scan.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.errors.exceptions.base import PySparkException
from pyspark.sql import SparkSession

import connect_plugin
from connect_plugin.server.tables.write_settings import (
    DATETIME_REBASE,
    INT96_REBASE,
    TIMESTAMP_TYPE,
)
from tests.integration.support import table_folders

MICROS = "TIMESTAMP'2024-01-01 00:00:00.123456'"
AT_MICROS = 1_704_067_200_123_456


def rows_both_ways(spark: SparkSession, name: str, shown: list[str]) -> list[tuple[object, ...]]:
    """The table's rows read by Spark through its view, after checking the scan reads the same."""
    by_spark = sorted(tuple(r) for r in spark.table(name).selectExpr(*shown).collect())
    scanned = connect_plugin.scan(spark, table=name).selectExpr(*shown).collect()
    assert sorted(tuple(r) for r in scanned) == by_spark
    return by_spark


def timestamp_units(workspace: Path, spark: SparkSession, column: str) -> set[str]:
    """The units of a column's parquet timestamps in every file of the session's tables."""
    units = set()
    for folder in table_folders(workspace, spark):
        for file in folder.rglob("*.parquet"):
            field = pq.read_schema(file).field(column)
            units.add(str(field.type))
    return units


def refused(setting: str, value: str, table: str, column: str) -> str:
    """The refusal of a write that a session setting would change."""
    return (
        rf"TEMP_TABLE_VALUE_NOT_HELD.*Temporary table \[{table}\]: column \[{column}\] holds "
        rf".*while the session's {re.escape(setting)} is {value} .*nothing was written: unset "
        rf"it \(spark.conf.unset\(\"{re.escape(setting)}\"\)\)"
    )


def test_a_session_writing_parquet_timestamps_in_milliseconds_keeps_microseconds(
    spark: SparkSession, workspace: Path
) -> None:
    """``spark.sql.parquet.outputTimestampType=TIMESTAMP_MILLIS`` made Spark's parquet writer
    drop a TIMESTAMP's microseconds in CTTAS, INSERT, UPDATE and MERGE, with no error
    (issue 45). The gateway's writes take the table's own option, top-level and nested; an
    INSERT, which Spark writes as the session says, is refused and leaves the table as it was."""
    spark.conf.set(TIMESTAMP_TYPE, "TIMESTAMP_MILLIS")
    columns = (
        f"{MICROS} AS ts, CAST(array(named_struct('t', {MICROS})) AS ARRAY<STRUCT<t: TIMESTAMP>>) "
        f"AS nested, {MICROS} AS at"
    )
    spark.sql(
        f"CREATE TEMPORARY TABLE p USING parquet PARTITIONED BY (at) AS SELECT 1 AS id, {columns}"
    )
    spark.sql("UPDATE p SET ts = ts + INTERVAL '0.000002' SECOND WHERE id = 1")
    spark.sql(
        f"MERGE INTO p USING (SELECT 3 AS id, {columns}) s ON p.id = s.id "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    with pytest.raises(
        PySparkException, match=refused(TIMESTAMP_TYPE, "TIMESTAMP_MILLIS", "p", "ts")
    ):
        spark.sql(f"INSERT INTO p SELECT 2, {MICROS}, NULL, {MICROS}")
    with pytest.raises(
        PySparkException, match=refused(TIMESTAMP_TYPE, "TIMESTAMP_MILLIS", "p", "ts")
    ):
        spark.sql(f"SELECT 2 AS id, {columns}").write.insertInto("p")
    shown = ["id", "unix_micros(ts)", "unix_micros(nested[0].t)", "unix_micros(at)"]
    assert rows_both_ways(spark, "p", shown) == [
        (1, AT_MICROS + 2, AT_MICROS, AT_MICROS),
        (3, AT_MICROS, AT_MICROS, AT_MICROS),
    ]
    assert timestamp_units(workspace, spark, "ts") == {"timestamp[us, tz=UTC]"}
    spark.conf.unset(TIMESTAMP_TYPE)
    spark.sql(f"INSERT INTO p SELECT 2, {MICROS} + INTERVAL '0.000001' SECOND, NULL, {MICROS}")
    assert rows_both_ways(spark, "p", ["id", "unix_micros(ts)"]) == [
        (1, AT_MICROS + 2),
        (2, AT_MICROS + 1),
        (3, AT_MICROS),
    ]
    assert len(table_folders(workspace, spark)) == 1


FAR_TIMESTAMPS = (
    "SELECT * FROM VALUES (1, TIMESTAMP'0001-01-01 00:00:00.000001'), "
    "(2, TIMESTAMP'1000-03-01 12:34:56.123456'), (3, TIMESTAMP'1677-09-21 00:12:43.145224'), "
    "(4, TIMESTAMP'2262-04-11 23:47:16.854776'), (5, TIMESTAMP'9999-12-31 23:59:59.999999'), "
    "(6, timestamp_micros(-62198755200000000)), (7, timestamp_micros(9012505233654775807)) "
    "AS t(id, ts)"
)
"""Timestamps outside 1677-09-21 00:12:43.145224 to 2262-04-11 23:47:16.854775 UTC, which
nanoseconds since the epoch cannot hold, Spark's first and the last INT96 holds: Spark's INT96
writer overflows after 287564-12-03 04:00:54.775807 UTC (it adds the Julian day of the
epoch to the microseconds)."""


def test_the_scan_reads_every_timestamp_whatever_int96_the_session_writes(
    spark: SparkSession, workspace: Path
) -> None:
    """Spark writes TIMESTAMP as INT96 by default (``outputTimestampType``), which pyarrow
    reads as nanoseconds: ``scan(table=...)`` of a table holding a timestamp outside
    1677-2262 failed (a cast of nanoseconds to microseconds that would lose data). CTTAS
    writes microseconds whatever the session says; the scan reads an INSERT's INT96 in
    microseconds, as Spark does."""
    expected = sorted(
        tuple(r) for r in spark.sql(FAR_TIMESTAMPS).selectExpr("id", "unix_micros(ts)").collect()
    )
    spark.sql(f"CREATE TEMPORARY TABLE by_default USING parquet AS {FAR_TIMESTAMPS}")
    spark.sql(f"INSERT INTO by_default {FAR_TIMESTAMPS}")
    spark.conf.set(TIMESTAMP_TYPE, "INT96")
    spark.sql(f"CREATE TEMPORARY TABLE int96 USING parquet AS {FAR_TIMESTAMPS} WHERE id < 4")
    spark.sql(f"INSERT INTO int96 {FAR_TIMESTAMPS} WHERE id >= 4")
    assert rows_both_ways(spark, "int96", ["id", "unix_micros(ts)"]) == expected
    assert rows_both_ways(spark, "by_default", ["id", "unix_micros(ts)"]) == sorted(expected * 2)
    # CTTAS writes microseconds; an INSERT, Spark's write, INT96 as the session says.
    assert timestamp_units(workspace, spark, "ts") == {"timestamp[us, tz=UTC]", "timestamp[ns]"}


INT96_LAST = 9_012_505_233_654_775_807
"""The last microsecond Spark's INT96 writer converts: 287564-12-03 04:00:54.775807 UTC."""
BEYOND_INT96 = (
    "SELECT id, timestamp_micros(micros) AS ts, "
    "CAST(array(timestamp_micros(micros)) AS ARRAY<TIMESTAMP>) AS tss "
    f"FROM VALUES (1, {INT96_LAST}), (2, {INT96_LAST + 1}), (3, 9223372036854775807) "
    "AS v(id, micros)"
)
BEYOND_INT96_SHOWN = ["id", "unix_micros(ts)", "unix_micros(tss[0])"]


def test_an_insert_of_timestamps_int96_cannot_hold_is_refused(spark: SparkSession) -> None:
    """Spark's INT96 writer overflows past 287564-12-03 04:00:54.775807 UTC (it adds the
    Julian day of the epoch in microseconds to a long): an INSERT, which Spark writes as
    INT96 by default, stored such a timestamp as another one, with no error (issue 45).
    CTTAS writes microseconds and holds them; an INSERT of one is refused, with the
    setting that holds it, and the rows up to the last one INT96 holds go in."""
    expected = sorted(
        tuple(r) for r in spark.sql(BEYOND_INT96).selectExpr(*BEYOND_INT96_SHOWN).collect()
    )
    spark.sql(f"CREATE TEMPORARY TABLE far USING parquet AS {BEYOND_INT96}")
    assert rows_both_ways(spark, "far", BEYOND_INT96_SHOWN) == expected
    for where in ("id = 2", "id = 3"):
        with pytest.raises(
            PySparkException,
            match=(
                r"TEMP_TABLE_VALUE_NOT_HELD.*Temporary table \[far\]: column \[ts\] .*"
                r"after 287564-12-03 04:00:54.775807 UTC.*"
                + re.escape(f'spark.conf.set("{TIMESTAMP_TYPE}", "TIMESTAMP_MICROS")')
            ),
        ):
            spark.sql(f"INSERT INTO far {BEYOND_INT96} WHERE {where}")
    with pytest.raises(PySparkException, match=r"TEMP_TABLE_VALUE_NOT_HELD.*column \[tss\]"):
        spark.sql(
            f"INSERT INTO far SELECT id, TIMESTAMP'2024-01-01', tss "
            f"FROM ({BEYOND_INT96}) WHERE id = 3"
        )
    assert rows_both_ways(spark, "far", BEYOND_INT96_SHOWN) == expected
    spark.sql(f"INSERT INTO far {BEYOND_INT96} WHERE id = 1")
    assert rows_both_ways(spark, "far", BEYOND_INT96_SHOWN) == sorted([*expected, expected[0]])
    spark.conf.set(TIMESTAMP_TYPE, "TIMESTAMP_MICROS")
    spark.sql(f"INSERT INTO far {BEYOND_INT96} WHERE id > 1")
    assert rows_both_ways(spark, "far", BEYOND_INT96_SHOWN) == sorted([*expected, *expected])


OLD_DAYS = (
    "SELECT 1 AS id, DATE'1000-03-01' AS d, TIMESTAMP'1000-03-01 12:34:56.123456' AS ts, "
    "CAST(array(DATE'1582-10-04') AS ARRAY<DATE>) AS ds, 'x' AS s"
)
OLD_DAYS_SHOWN = ["id", "unix_date(d)", "unix_micros(ts)", "unix_date(ds[0])"]


def test_a_session_writing_parquet_in_the_julian_calendar_is_refused(
    spark: SparkSession, workspace: Path
) -> None:
    """``spark.sql.parquet.datetimeRebaseModeInWrite=LEGACY`` makes Spark write dates before
    1582-10-15 and timestamps before 1900 in the Julian calendar, a setting of the session
    that no write's option overrides: Spark reads them back right, pyarrow's scan days
    off. A write of a table with dates or timestamps is refused while the session says
    so, naming the column and the setting, and leaves nothing; other tables are written."""
    expected = sorted(tuple(r) for r in spark.sql(OLD_DAYS).selectExpr(*OLD_DAYS_SHOWN).collect())
    spark.sql(f"CREATE TEMPORARY TABLE kept USING parquet AS {OLD_DAYS}")
    spark.conf.set(DATETIME_REBASE, "LEGACY")
    with pytest.raises(PySparkException, match=refused(DATETIME_REBASE, "LEGACY", "old", "d")):
        spark.sql(f"CREATE TEMPORARY TABLE old USING parquet AS {OLD_DAYS}")
    with pytest.raises(PySparkException, match=refused(DATETIME_REBASE, "LEGACY", "kept", "d")):
        spark.sql(f"INSERT INTO kept {OLD_DAYS}")
    with pytest.raises(PySparkException, match=refused(DATETIME_REBASE, "LEGACY", "kept", "d")):
        spark.sql("UPDATE kept SET s = 'y'")
    spark.sql("CREATE TEMPORARY TABLE other USING parquet AS SELECT 1 AS id, 'x' AS s")
    spark.sql("CREATE TEMPORARY TABLE by_json USING json AS " + OLD_DAYS)
    spark.sql(
        "CREATE TEMPORARY TABLE partitioned USING parquet PARTITIONED BY (d) AS "
        "SELECT 1 AS id, DATE'1000-03-01' AS d"
    )
    assert rows_both_ways(spark, "kept", OLD_DAYS_SHOWN) == expected
    assert rows_both_ways(spark, "by_json", OLD_DAYS_SHOWN) == expected
    assert rows_both_ways(spark, "partitioned", ["id", "unix_date(d)"]) == [(1, -354226)]
    assert sorted(r.name for r in spark.sql("SHOW TEMPORARY TABLES").collect()) == [
        "by_json",
        "kept",
        "other",
        "partitioned",
    ]
    assert len(table_folders(workspace, spark)) == 4
    spark.conf.unset(DATETIME_REBASE)
    spark.sql(f"INSERT INTO kept {OLD_DAYS}")
    assert rows_both_ways(spark, "kept", OLD_DAYS_SHOWN) == sorted(expected * 2)


def test_a_session_writing_int96_in_the_julian_calendar_refuses_inserts_only(
    spark: SparkSession,
) -> None:
    """``spark.sql.parquet.int96RebaseModeInWrite=LEGACY`` rebases INT96 timestamps only: the
    gateway's writes store microseconds and are kept exact; an INSERT, which Spark writes in
    INT96 while the session says so, is refused, and goes through once the session writes
    microseconds."""
    expected = sorted(tuple(r) for r in spark.sql(OLD_DAYS).selectExpr(*OLD_DAYS_SHOWN).collect())
    spark.conf.set(INT96_REBASE, "LEGACY")
    spark.sql(f"CREATE TEMPORARY TABLE t USING parquet AS {OLD_DAYS}")
    spark.sql("UPDATE t SET s = 'y'")
    with pytest.raises(PySparkException, match=refused(INT96_REBASE, "LEGACY", "t", "ts")):
        spark.sql(f"INSERT INTO t {OLD_DAYS}")
    assert rows_both_ways(spark, "t", OLD_DAYS_SHOWN) == expected
    spark.conf.set(TIMESTAMP_TYPE, "TIMESTAMP_MICROS")
    spark.sql(f"INSERT INTO t {OLD_DAYS}")
    assert rows_both_ways(spark, "t", OLD_DAYS_SHOWN) == sorted(expected * 2)


LAYOUT_ONLY = (
    "SELECT 1 AS id, CAST(123.45 AS DECIMAL(5,2)) AS d5, "
    "CAST(-12345678.1234 AS DECIMAL(18,4)) AS d18, "
    "CAST('12345678901234567890.123456789012345678' AS DECIMAL(38,18)) AS d38, "
    "array(1, NULL) AS a, named_struct('k', array(CAST(1.5 AS DECIMAL(3,1)))) AS m, "
    "TIMESTAMP'1883-11-18 12:00:00.000007 UTC' AS ts, DATE'1582-10-15' AS d"
)
LAYOUT_ONLY_SHOWN = [
    "id",
    "CAST(d5 AS STRING)",
    "CAST(d18 AS STRING)",
    "CAST(d38 AS STRING)",
    "CAST(a AS STRING)",
    "CAST(m AS STRING)",
    "unix_micros(ts)",
    "unix_date(d)",
]


@pytest.mark.parametrize(
    ("fmt", "setting", "value"),
    [
        ("parquet", "spark.sql.parquet.writeLegacyFormat", "true"),
        ("parquet", "spark.sql.session.timeZone", "America/Los_Angeles"),
        ("parquet", "spark.sql.parquet.compression.codec", "zstd"),
        ("orc", "spark.sql.orc.impl", "hive"),
        ("orc", "spark.sql.orc.compression.codec", "zstd"),
        ("orc", "spark.sql.session.timeZone", "Pacific/Kiritimati"),
    ],
)
def test_settings_that_change_how_files_are_laid_out_keep_every_value(
    spark: SparkSession, fmt: str, setting: str, value: str
) -> None:
    """Kept as examples: these settings change how the files are written (legacy parquet
    decimals and lists, compression, the orc writer, the writing session's time zone) and
    every value reads back the same, by Spark and by the scan, in another time zone."""
    expected = sorted(
        tuple(r) for r in spark.sql(LAYOUT_ONLY).selectExpr(*LAYOUT_ONLY_SHOWN).collect()
    )
    spark.conf.set(setting, value)
    spark.sql(f"CREATE TEMPORARY TABLE t USING {fmt} AS {LAYOUT_ONLY}")
    spark.sql(f"INSERT INTO t {LAYOUT_ONLY}")
    spark.conf.unset(setting)
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")
    by_spark = sorted(tuple(r) for r in spark.table("t").selectExpr(*LAYOUT_ONLY_SHOWN).collect())
    assert by_spark == sorted(expected * 2)
    if fmt == "parquet":
        assert rows_both_ways(spark, "t", LAYOUT_ONLY_SHOWN) == by_spark
