"""What a format cannot hold exactly is refused, naming the column, its type and what to use.

A type a format cannot hold is refused before anything is written; a value a
format cannot hold (within a type it holds) stops the write on the first such
row, before Spark commits a file. Either way nothing is left: no folder, no
view, no entry in SHOW TEMPORARY TABLES, and an INSERT leaves the table as it
was.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import AnalysisException
from pyspark.errors.exceptions.base import PySparkException
from pyspark.sql import SparkSession

from tests.integration.support import table_folders, temp_table_names

LAST_SECOND_BEFORE_1970 = (
    "SELECT * FROM VALUES (1, TIMESTAMP '1969-12-31 23:59:59.999999'), "
    "(2, TIMESTAMP '1969-12-31 23:59:59.5'), (3, TIMESTAMP '1969-12-31 23:59:59') AS t(id, ts)"
)
"""Rows orc read back as 1970-01-01 00:00:00.999999, 00:00:00.5 and 1969-12-31 23:59:59
(UTC), with no error (issue 45)."""
NEGATIVE_ZERO = (
    "SELECT * FROM VALUES (0, CAST(NULL AS FLOAT)), (1, CAST('-0.0' AS FLOAT)), "
    "(2, CAST('0.0' AS FLOAT)) AS v(id, f)"
)
"""Rows an orc temp table read back as NULL, -0.0, -0.0, with no error (the round-trip
property's find, issue 45): Spark wrote the last two into one file, exactly, and ORC's reader
took their batch for one repeated value."""
ZEROS_SHOWN = "SELECT id, CAST(f AS STRING) FROM {} ORDER BY id"


def assert_only(spark: SparkSession, workspace: Path, names: list[str]) -> None:
    """The session has exactly the temp tables ``names``: their folders, views and entries."""
    assert sorted(temp_table_names(spark)) == sorted(names)
    views = [r.viewName for r in spark.sql("SHOW VIEWS").collect() if r.isTemporary]
    assert sorted(views) == sorted(names)
    folders = table_folders(workspace, spark)
    assert len(folders) == len(names), [sorted(str(p) for p in f.rglob("*")) for f in folders]


@pytest.mark.parametrize(
    ("fmt", "query", "message"),
    [
        ("json", "SELECT map(1, 'a', 2, 'b') AS m",
         r"column \[m\] of type map<int,string> cannot be held exactly by json \(json map keys "
         r"are strings\); formats that hold it: parquet(?!,)"),
        ("json", "SELECT 1 AS i, array(named_struct('k', map(DATE'2024-01-01', 1))) AS deep",
         r"column \[deep\] of type array<struct<k:map<date,int>>> cannot be held exactly by "
         r"json .*formats that hold it: parquet(?!,)"),
        ("orc", "SELECT map('b', 1, 'a', 2) AS m",
         r"column \[m\] of type map<string,int> cannot be held exactly by orc \(orc sorts a "
         r"map's entries by key, so their order changes\); formats that hold it: parquet, json"),
        ("csv", "SELECT X'00FF10' AS b",
         r"column \[b\] of type binary cannot be held exactly by csv \(csv writes the bytes as "
         r"text\); formats that hold it: parquet, orc, json"),
        ("csv", "SELECT 1 AS i, array(1) AS a",
         r"column \[a\] of type array<int> .* by csv \(csv holds only flat columns\); formats "
         r"that hold it: parquet, orc, json"),
        ("json", "SELECT parse_json('1') AS v",
         r"column \[v\] of type variant .* by json .*formats that hold it: parquet"),
        ("orc", "SELECT parse_json('1') AS v",
         r"column \[v\] of type variant .* by orc .*formats that hold it: parquet"),
        ("orc", "SELECT 1 AS i, NULL AS nothing",
         r"column \[nothing\] of type void .* by orc .*formats that hold it: parquet, json"),
        ("parquet", "SELECT make_interval(1, 2) AS iv",
         r"column \[iv\] of type interval .*no temp-table format holds it"),
        ("parquet", "SELECT 1 AS i, X'01' AS p",
         r"partition column \[p\] of type binary cannot be held exactly"),
    ],
    ids=["json-int-keys", "json-nested-keys", "orc-map", "csv-binary", "csv-array", "json-variant",
         "orc-variant", "orc-void", "calendar-interval", "binary-partition"],
)
def test_a_type_the_format_cannot_hold_is_refused_before_writing(
    spark: SparkSession, workspace: Path, fmt: str, query: str, message: str
) -> None:
    spark.sql("CREATE TEMP TABLE keeper AS SELECT 1 AS x")
    partition = "PARTITIONED BY (p)" if "AS p" in query else ""
    with pytest.raises(AnalysisException, match=r"Temporary table \[refused\] was not created: "):
        spark.sql(f"CREATE TEMPORARY TABLE refused USING {fmt} {partition} AS {query}")
    with pytest.raises(AnalysisException, match=message):
        spark.sql(f"CREATE OR REPLACE TEMPORARY TABLE keeper USING {fmt} {partition} AS {query}")
    assert_only(spark, workspace, ["keeper"])
    assert spark.table("keeper").collect() == [(1,)]


@pytest.mark.parametrize(
    ("fmt", "partition", "query", "message"),
    [
        ("text", "", "SELECT 'one' AS s UNION ALL SELECT 'two\nlines'",
         r"column \[s\] of type string holds NULL or a line break, which text cannot hold"),
        ("text", "", "SELECT 'one' AS s UNION ALL SELECT NULL",
         r"holds NULL or a line break, which text cannot hold"),
        ("text", "", "SELECT 'carriage\rreturn' AS s", r"NULL or a line break"),
        ("orc", "", "SELECT DATE'2024-01-01' AS d UNION ALL SELECT DATE'1582-10-10'",
         r"column \[d\] of type date holds a date or timestamp in the days 1582-10-05 to "
         r"1582-10-14 .*which orc cannot hold exactly.*use parquet, json, csv"),
        ("orc", "", "SELECT array(named_struct('t', TIMESTAMP'1582-10-07 12:00:00')) AS a",
         r"column \[a\] of type array<struct<t:timestamp>> holds a date or timestamp"),
        ("parquet", "PARTITIONED BY (k)", "SELECT 1 AS i, 'a' AS k UNION ALL SELECT 2, ''",
         r"column \[k\] of type string holds '', '__HIVE_DEFAULT_PARTITION__', a NUL "
         r"character or a string that is not UTF-8, which a partition folder name cannot hold"),
        ("csv", "PARTITIONED BY (k)", "SELECT 1 AS i, concat('a', chr(0)) AS k",
         r"which a partition folder name cannot hold"),
        ("json", "PARTITIONED BY (k)", "SELECT 1 AS i, '__HIVE_DEFAULT_PARTITION__' AS k",
         r"which a partition folder name cannot hold"),
        ("json", "", "SELECT map('k', array(CAST(X'61FF' AS STRING))) AS m",
         r"column \[m\] of type map<string,array<string>> holds a string that is not UTF-8, "
         r"which json cannot hold exactly.*use parquet\)"),
        ("csv", "", "SELECT CAST(X'C328' AS STRING) AS s",
         r"holds a string that is not UTF-8, which csv cannot hold exactly"),
        ("orc", "", LAST_SECOND_BEFORE_1970,
         r"column \[ts\] of type timestamp holds a timestamp from 1969-12-31 23:59:59.001 to "
         r"23:59:59.999999 UTC \(orc reads it back one second later\), which orc cannot hold "
         r"exactly.*use parquet, json, csv\)"),
        ("orc", "", "SELECT 1 AS i, named_struct('a', array(timestamp_micros(-999000))) AS s",
         r"column \[s\] of type struct<a:array<timestamp>> holds a timestamp from 1969-12-31"),
        ("orc", "", NEGATIVE_ZERO,
         r"column \[f\] of type float holds a -0.0 and a 0.0 in one write \(orc may read such "
         r"zeros back with one sign\), which orc cannot hold exactly.*use parquet, json, csv,"),
        ("orc", "", "SELECT 1 AS i, array(0.0D, CAST('-0.0' AS DOUBLE)) AS a",
         r"column \[a\] of type array<double> holds a -0.0 and a 0.0 in one write"),
        ("orc", "", "SELECT date_add(DATE'1970-01-01', -2147439565) AS d",
         r"column \[d\] of type date holds a date before -5877520-03-03 .*which orc cannot "
         r"hold exactly.*use parquet, json, csv\)"),
        ("orc", "", "SELECT timestamp_micros(CAST('-9223181856000000001' AS BIGINT)) AS ts",
         r"column \[ts\] of type timestamp holds a timestamp before -290301-01-01 00:00:00 UTC "
         r".*which orc cannot hold exactly.*use parquet\)"),
        ("json", "", "SELECT timestamp_micros(CAST('-9223372036854000001' AS BIGINT)) AS ts",
         r"column \[ts\] of type timestamp holds a timestamp before -290308-12-21 19:59:06 UTC "
         r"\(Spark cannot read it back from text\), which json cannot hold.*use parquet\)"),
        ("csv", "", "SELECT timestamp_micros(CAST('-9223372036854775807' AS BIGINT)) AS ts",
         r"holds a timestamp before -290308-12-21 19:59:06 UTC"),
    ],
    ids=["text-line-break", "text-null", "text-cr", "orc-date", "orc-timestamp",
         "empty-partition", "nul-partition", "default-partition", "json-not-utf8", "csv-not-utf8",
         "orc-last-second-before-1970", "orc-last-second-nested", "orc-negative-zero",
         "orc-negative-zero-nested", "orc-earliest-date",
         "orc-earliest-timestamp", "json-earliest-timestamp", "csv-earliest-timestamp"],
)
def test_a_value_the_format_cannot_hold_stops_the_write(
    spark: SparkSession, workspace: Path, fmt: str, partition: str, query: str, message: str
) -> None:
    spark.sql("CREATE TEMP TABLE keeper AS SELECT 1 AS x")
    with pytest.raises(PySparkException, match=message):
        spark.sql(f"CREATE TEMPORARY TABLE refused USING {fmt} {partition} AS {query}")
    with pytest.raises(PySparkException, match=r"Temporary table \[keeper\]"):
        spark.sql(f"CREATE OR REPLACE TEMPORARY TABLE keeper USING {fmt} {partition} AS {query}")
    assert_only(spark, workspace, ["keeper"])
    assert spark.table("keeper").collect() == [(1,)]


@pytest.mark.parametrize(
    ("zone", "query"),
    [
        ("UTC", LAST_SECOND_BEFORE_1970),
        ("Asia/Kolkata", "VALUES (1, TIMESTAMP'1970-01-01 05:29:59.999999'), "
         "(2, TIMESTAMP'1970-01-01 05:29:59.5')"),
    ],
    ids=["UTC", "Asia/Kolkata"],
)
def test_orc_refuses_an_insert_of_the_last_second_before_1970(
    spark: SparkSession, workspace: Path, zone: str, query: str
) -> None:
    """The same instants in any session time zone (orc moves them in UTC whatever the zone)."""
    spark.conf.set("spark.sql.session.timeZone", zone)
    spark.sql("CREATE TEMPORARY TABLE o (id INT, ts TIMESTAMP) USING orc")
    spark.sql("INSERT INTO o VALUES (0, TIMESTAMP '1970-01-01 00:00:00 UTC')")
    with pytest.raises(PySparkException, match=r"Temporary table \[o\]: column \[ts\] .*one "
                       r"second later"):
        spark.sql(f"INSERT INTO o {query}")
    with pytest.raises(PySparkException, match=r"one second later"):
        spark.sql(
            "INSERT INTO o SELECT 4, timestamp_micros(unix_micros(ts) - 1) FROM o"
        )
    assert [tuple(r) for r in spark.sql("SELECT id, unix_micros(ts) FROM o").collect()] == [(0, 0)]
    assert_only(spark, workspace, ["o"])


def test_orc_refuses_a_write_that_gives_a_column_zeros_of_both_signs(
    spark: SparkSession, workspace: Path
) -> None:
    """Each write's files are its own: zeros of both signs written apart read back right, and
    a write (an INSERT, a DataFrame insertInto, a rewrite) that would put both into one
    column's files stops before writing."""
    spark.sql("CREATE TEMPORARY TABLE z (id INT, f FLOAT) USING orc")
    spark.sql("INSERT INTO z VALUES (1, CAST('-0.0' AS FLOAT)), (2, CAST('-0.0' AS FLOAT))")
    spark.sql("INSERT INTO z VALUES (3, CAST('0.0' AS FLOAT))")
    held = [(1, "-0.0"), (2, "-0.0"), (3, "0.0")]
    assert [tuple(r) for r in spark.sql(ZEROS_SHOWN.format("z")).collect()] == held
    both = r"Temporary table \[z\]: column \[f\] of type float holds a -0.0 and a 0.0"
    with pytest.raises(PySparkException, match=both):
        spark.sql(f"INSERT INTO z SELECT id + 10, f FROM ({NEGATIVE_ZERO})")
    with pytest.raises(PySparkException, match=both):
        spark.sql("INSERT INTO z VALUES (13, 0.0D), (14, -0.0D)")
    with pytest.raises(PySparkException, match=both):
        spark.sql("SELECT id + 20 AS id, f FROM z").write.insertInto("z")
    with pytest.raises(PySparkException, match=both):
        spark.sql("UPDATE z SET id = id + 30")
    assert [tuple(r) for r in spark.sql(ZEROS_SHOWN.format("z")).collect()] == held
    assert_only(spark, workspace, ["z"])


def test_orc_refuses_a_partition_insert_that_gives_a_column_zeros_of_both_signs(
    spark: SparkSession, workspace: Path
) -> None:
    """Spark runs an INSERT with a PARTITION clause as written; its query is checked first."""
    spark.sql("CREATE TEMPORARY TABLE pz (id INT, d DOUBLE, p INT) USING orc PARTITIONED BY (p)")
    spark.sql("INSERT INTO pz PARTITION (p = 1) VALUES (1, CAST('-0.0' AS DOUBLE))")
    spark.sql("INSERT INTO pz PARTITION (p) VALUES (2, 0.0D, 2)")
    held = [(1, "-0.0", 1), (2, "0.0", 2)]
    shown = "SELECT id, CAST(d AS STRING), p FROM pz ORDER BY id"
    assert [tuple(r) for r in spark.sql(shown).collect()] == held
    both = r"Temporary table \[pz\]: column \[d\] of type double holds a -0.0 and a 0.0"
    with pytest.raises(PySparkException, match=both):
        spark.sql("INSERT INTO pz PARTITION (p = 3) SELECT id + 10, d FROM pz")
    with pytest.raises(PySparkException, match=both):
        spark.sql(
            "INSERT OVERWRITE pz PARTITION (p = 1) IF NOT EXISTS "
            "VALUES (4, CAST('-0.0' AS DOUBLE)), (5, 0.0D)"
        )
    assert [tuple(r) for r in spark.sql(shown).collect()] == held
    assert_only(spark, workspace, ["pz"])


def test_orc_keeps_zeros_of_both_signs_in_different_columns(spark: SparkSession) -> None:
    """Each column, struct field and array's elements are stored apart."""
    query = (
        "SELECT 1 AS id, CAST('-0.0' AS FLOAT) AS f, 0.0D AS d, "
        "named_struct('a', CAST('-0.0' AS DOUBLE), 'b', 0.0D) AS s, "
        "array(CAST('-0.0' AS DOUBLE), CAST('-0.0' AS DOUBLE)) AS a "
        "UNION ALL SELECT 2, CAST('-0.0' AS FLOAT), 0.0D, "
        "named_struct('a', CAST('-0.0' AS DOUBLE), 'b', 0.0D), array(0.5D)"
    )
    shown = ["id", "CAST(f AS STRING)", "CAST(d AS STRING)", "CAST(s AS STRING)",
             "CAST(a AS STRING)"]  # fmt: skip
    spark.sql(f"CREATE TEMPORARY TABLE apart USING orc AS {query}")
    assert sorted(spark.table("apart").selectExpr(*shown).collect()) == sorted(
        spark.sql(query).selectExpr(*shown).collect()
    )


@pytest.mark.parametrize("fmt", ["parquet", "json", "csv"])
def test_the_other_formats_keep_negative_and_positive_zero_apart(
    spark: SparkSession, fmt: str
) -> None:
    spark.sql(f"CREATE TEMPORARY TABLE zeros USING {fmt} AS {NEGATIVE_ZERO}")
    spark.sql(f"INSERT INTO zeros SELECT id + 10, f FROM ({NEGATIVE_ZERO})")
    shown = [tuple(r) for r in spark.sql(ZEROS_SHOWN.format("zeros")).collect()]
    assert shown == [(0, None), (1, "-0.0"), (2, "0.0"), (10, None), (11, "-0.0"), (12, "0.0")]


def test_orc_keeps_the_times_around_the_epoch_it_can_hold(spark: SparkSession) -> None:
    """Timestamps up to 1969-12-31 23:59:59.000999 and from the epoch on, and every
    TIMESTAMP_NTZ and DATE there (orc stores TIMESTAMP_NTZ as microseconds)."""
    held = (-1_000_001, -1_000_000, -999_999, -999_001, 0, 1, 999, 999_999, 1_000_000)
    rows = [
        f"SELECT {'timestamp_micros(' + str(m) + ')' if m in held else 'NULL'} AS ts, "
        f"TIMESTAMP_NTZ'1970-01-01' + CAST('{m}' AS BIGINT) * INTERVAL '0.000001' SECOND AS ntz, "
        f"date_add(DATE'1970-01-01', {m // 1_000_000}) AS d"
        for m in (*held, -999_000, -500_000, -1)
    ]
    query = " UNION ALL ".join(rows)
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    spark.sql(f"CREATE TEMPORARY TABLE near USING orc AS {query}")
    shown = ("unix_micros(ts)", "CAST(ntz AS STRING)", "unix_date(d)")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert sorted(spark.table("near").selectExpr(*shown).collect(), key=repr) == sorted(
        spark.sql(query).selectExpr(*shown).collect(), key=repr
    )


def test_orc_keeps_the_days_around_the_calendar_switch(spark: SparkSession) -> None:
    query = (
        "SELECT * FROM VALUES (DATE'1582-10-04', TIMESTAMP'1582-10-03 23:59:59.999999'), "
        "(DATE'1582-10-15', TIMESTAMP'1582-10-16 00:00:00'), (DATE'1500-02-28', "
        "TIMESTAMP'1000-01-01 00:00:00.000001') AS t(d, ts)"
    )
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    spark.sql(f"CREATE TEMPORARY TABLE around USING orc AS {query}")
    shown = ("unix_date(d)", "unix_micros(ts)")
    assert sorted(spark.table("around").selectExpr(*shown).collect()) == sorted(
        spark.sql(query).selectExpr(*shown).collect()
    )


@pytest.mark.parametrize(
    ("fmt", "options", "message"),
    [
        ("json", "timestampFormat 'yyyy-MM-dd'",
         r"option \[timestampFormat\] is chosen by the gateway for json temp tables"),
        ("csv", "nullValue ''", r"option \[nullValue\] is chosen by the gateway"),
        ("csv", "ignoreLeadingWhiteSpace 'true'", r"option \[ignoreLeadingWhiteSpace\]"),
        ("csv", "sep ';;'", r"option \[sep\] must be one character other than a quote"),
        ("csv", "delimiter '\"'", r"option \[delimiter\] must be one character"),
        ("orc", "'orc.proleptic.gregorian' 'true'", r"option \[orc.proleptic.gregorian\]"),
    ],
)
def test_options_that_would_change_values_are_refused(
    spark: SparkSession, workspace: Path, fmt: str, options: str, message: str
) -> None:
    with pytest.raises(AnalysisException, match=message):
        spark.sql(f"CREATE TEMPORARY TABLE o USING {fmt} OPTIONS ({options}) AS SELECT 1 AS i")
    assert_only(spark, workspace, [])


def test_layout_options_are_taken(spark: SparkSession) -> None:
    spark.sql("CREATE TEMPORARY TABLE g USING json OPTIONS (compression 'gzip') AS SELECT 1 AS i")
    spark.sql(
        "CREATE TEMPORARY TABLE p USING parquet OPTIONS ('parquet.page.size' '65536') "
        "AS SELECT 1 AS i"
    )
    assert spark.table("g").collect() == spark.table("p").collect() == [(1,)]
