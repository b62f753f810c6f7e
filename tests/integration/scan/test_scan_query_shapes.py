"""A scan answers every query on its own: a filtered query never narrows a later one.

Spark 4.1-4.3 keep the Python reader that one query's pushed filters
narrowed and hand it to later queries of the same DataFrame or view, so
these sequences lost rows while the gateway let Spark push filters. Every
route to a scan is asked the same: the Python API, a SQL view, ``table=``,
a scan inside CTTAS, a view over a scan, a cached DataFrame, and several
filtered copies of one scan in one query. Files are still pruned by the
Filters straight above a DataFrame scan: a folder holding a broken record
is never opened by a query whose filter excludes it, and is opened (and
fails the query) whenever the filter cannot exclude it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import SparkRuntimeException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import connect_plugin

MONTHS = 4
ROWS = 250
COMPATIBILITY_DOC = Path(__file__).resolve().parents[3] / "docs" / "compatibility.md"


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))


@pytest.fixture(scope="module")
def hive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``month=1`` .. ``month=4``, ids 0..249 in each."""
    root = tmp_path_factory.mktemp("hive")
    for month in range(1, MONTHS + 1):
        _write(
            root / f"month={month}" / "part.json",
            [json.dumps({"id": i, "v": i * month}) for i in range(ROWS)],
        )
    return root


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``good/`` holds two records, ``bad/`` a broken one that fails any read of it."""
    root = tmp_path_factory.mktemp("guarded")
    _write(root / "good" / "a.json", ['{"id": 1}', '{"id": 2}'])
    _write(root / "bad" / "b.json", ['{"id": 3', '{"id": 4}'])
    return root


def _months(frame: DataFrame) -> dict[int, int]:
    return {row["month"]: row["count"] for row in frame.groupBy("month").count().collect()}


def _count(spark: SparkSession, sql: str) -> int:
    value: int = spark.sql(sql).collect()[0][0]
    return value


def test_a_filtered_query_leaves_later_queries_of_the_dataframe_whole(
    spark: SparkSession, hive: Path
) -> None:
    """The first user's report: groupBy after a filtered count saw one month of four."""
    df = connect_plugin.scan(spark, str(hive), format="json", partitioning="hive")
    assert df.groupBy("month").count().count() == MONTHS
    assert df.where("month = 3").count() == ROWS
    assert df.groupBy("month").count().count() == MONTHS
    assert df.where(F.col("month") == 2).count() == ROWS
    assert df.count() == MONTHS * ROWS
    assert _months(df) == dict.fromkeys(range(1, MONTHS + 1), ROWS)


def test_a_sql_view_answers_each_query_whole(spark: SparkSession, hive: Path) -> None:
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW ev USING scan OPTIONS (path '{hive}', "
        "format 'json', partitioning 'hive')"
    )
    assert _count(spark, "SELECT count(*) FROM ev WHERE month = 2") == ROWS
    assert _count(spark, "SELECT count(*) FROM ev") == MONTHS * ROWS
    assert _count(spark, "SELECT count(DISTINCT month) FROM ev WHERE month IN (1, 4)") == 2
    assert _count(spark, "SELECT count(DISTINCT month) FROM ev") == MONTHS
    pairs = "SELECT count(*) FROM ev a JOIN ev b ON a.id = b.id AND a.month = 1 AND b.month = 2"
    assert _count(spark, pairs) == ROWS


def test_dirs_partitions_and_implicit_columns_stay_whole(spark: SparkSession, hive: Path) -> None:
    df = connect_plugin.scan(spark, str(hive), format="json", columns=["id", "dir0", "filename"])
    assert df.where("dir0 = 'month=1'").count() == ROWS
    assert df.select("dir0").distinct().count() == MONTHS
    assert df.where(F.col("filename") == "part.json").count() == MONTHS * ROWS
    assert df.where("dir0 > 'month=2'").count() == 2 * ROWS
    assert df.count() == MONTHS * ROWS


def test_differently_filtered_copies_in_one_query(spark: SparkSession, hive: Path) -> None:
    df = connect_plugin.scan(spark, str(hive), format="json", partitioning="hive")
    union = df.where("month = 1").union(df.where("month = 2"))
    assert _months(union) == {1: ROWS, 2: ROWS}
    joined = df.where("month = 1").alias("a").join(df.where("month = 3").alias("b"), "id")
    assert joined.count() == ROWS
    assert df.alias("a").join(df.alias("b"), "id").count() == ROWS * MONTHS * MONTHS


def test_a_self_join_after_a_filter_keeps_every_row(spark: SparkSession, hive: Path) -> None:
    df = connect_plugin.scan(spark, str(hive), format="json", partitioning="hive")
    assert df.where("month = 4").count() == ROWS
    assert df.alias("a").join(df.alias("b"), "id").count() == ROWS * MONTHS * MONTHS


def test_scans_of_a_temp_table_stay_whole(spark: SparkSession, unique_name: str) -> None:
    frame = spark.range(40).selectExpr("id", "id % 4 AS k")
    connect_plugin.create_temp_table(frame, unique_name, partition_by=["k"])
    table = connect_plugin.scan(spark, table=unique_name)
    assert table.where("k = 1").count() == 10
    assert table.count() == 40
    assert table.select("k").distinct().count() == 4


def test_a_filtered_scan_inside_cttas_and_views_over_scans(
    spark: SparkSession, hive: Path, unique_name: str
) -> None:
    df = connect_plugin.scan(spark, str(hive), format="json", partitioning="hive")
    created = list(connect_plugin.create_temp_table(df.where("month = 1"), unique_name))
    assert created == [unique_name, ROWS]
    assert df.count() == MONTHS * ROWS
    df.where("month > 2").createOrReplaceTempView("late_months")
    assert _count(spark, "SELECT count(*) FROM late_months") == 2 * ROWS
    assert df.count() == MONTHS * ROWS
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW ev_all USING scan OPTIONS (path '{hive}', "
        "format 'json', partitioning 'hive')"
    )
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW ev_late AS SELECT * FROM ev_all WHERE month > 3")
    assert _count(spark, "SELECT count(*) FROM ev_late") == ROWS
    assert _count(spark, "SELECT count(*) FROM ev_all") == MONTHS * ROWS
    assert _count(spark, "SELECT count(*) FROM ev_late") == ROWS


def test_a_cached_scan_answers_filtered_and_whole_queries(spark: SparkSession, hive: Path) -> None:
    """Queries over a cached scan read Spark's cache: the gateway leaves its scan unrewritten."""
    df = connect_plugin.scan(spark, str(hive), format="json", partitioning="hive")
    df.cache()
    try:
        assert df.count() == MONTHS * ROWS
        assert df.where("month = 2").count() == ROWS
        assert df.count() == MONTHS * ROWS
        assert _months(df) == dict.fromkeys(range(1, MONTHS + 1), ROWS)
        for query in (df.where("month = 2"), df.groupBy("month").count(), df):
            assert "InMemoryTableScan" in query._explain_string(extended=False)
        counted = df.agg(F.count("*"))
        assert "InMemoryTableScan" in counted._explain_string(extended=False)
    finally:
        df.unpersist()
    assert "InMemoryTableScan" not in df.where("month = 1")._explain_string(extended=False)
    assert df.where("month = 1").count() == ROWS
    assert df.count() == MONTHS * ROWS


def test_a_cached_filtered_scan_is_pruned_and_clearing_the_cache_prunes_again(
    spark: SparkSession, guarded: Path
) -> None:
    """A cached scan reads every file once (as Spark's cache of a plain read would); a cached
    filtered scan, and any scan once the cache is cleared, prune as before."""
    df = connect_plugin.scan(spark, str(guarded), format="json", columns=["id", "dir0"])
    good = df.where("dir0 = 'good'")
    good.cache()
    assert good.count() == 2
    assert "InMemoryTableScan" in good._explain_string(extended=False)
    good.unpersist()
    df.cache()
    with pytest.raises(SparkRuntimeException, match=r"b\.json"):
        df.where("dir0 = 'good'").count()
    spark.catalog.clearCache()
    assert df.where("dir0 = 'good'").count() == 2


CONDITIONS: dict[str, Callable[[DataFrame], DataFrame]] = {
    "SQL =": lambda df: df.where("dir0 = 'good'"),
    "Column ==": lambda df: df.where(F.col("dir0") == "good"),
    "literal first": lambda df: df.where(F.lit("good") == df["dir0"]),
    "IN": lambda df: df.where("dir0 IN ('good', 'other')"),
    "isin": lambda df: df.where(F.col("dir0").isin("good", "other")),
    "<>": lambda df: df.where("dir0 <> 'bad'"),
    "NOT": lambda df: df.where(~(F.col("dir0") == "bad")),
    "LIKE prefix": lambda df: df.where("dir0 LIKE 'go%'"),
    "startswith": lambda df: df.where(F.col("dir0").startswith("go")),
    "AND with a data column": lambda df: df.where("id > 0 AND dir0 = 'good'"),
    "two filters": lambda df: df.where("id > 0").where(F.col("dir0") == "good"),
    "filter after a select": lambda df: df.select("id", "dir0").where("dir0 = 'good'"),
    "OR of two folders": lambda df: df.where("dir0 = 'good' OR dir0 = 'other'"),
    "BETWEEN": lambda df: df.where("dir0 BETWEEN 'c' AND 'h'"),
    "IS NOT NULL and =": lambda df: df.where("dir0 IS NOT NULL AND `dir0` = 'good'"),
}


@pytest.mark.parametrize("condition", list(CONDITIONS))
def test_filters_on_folders_leave_excluded_files_unopened(
    spark: SparkSession, guarded: Path, condition: str
) -> None:
    df = connect_plugin.scan(spark, str(guarded), format="json", columns=["id", "dir0"])
    assert sorted(row["id"] for row in CONDITIONS[condition](df).collect()) == [1, 2]


UNDECIDABLE: dict[str, Callable[[DataFrame], DataFrame]] = {
    "no filter": lambda df: df,
    "a data column": lambda df: df.where("id = 1"),
    "OR with a data column": lambda df: df.where("dir0 = 'good' OR id = 3"),
    "a function of the folder": lambda df: df.where("upper(dir0) = 'GOOD'"),
    "a typed literal": lambda df: df.where("dir0 = CAST('good' AS STRING)"),
    "a qualified name": lambda df: df.alias("t").where("t.dir0 = 'good'"),
    "a limit under the filter": lambda df: df.limit(10).where("dir0 = 'good'"),
}


@pytest.mark.parametrize("condition", list(UNDECIDABLE))
def test_filters_that_cannot_exclude_a_folder_open_it(
    spark: SparkSession, guarded: Path, condition: str
) -> None:
    """Pruning only drops files it is sure of: here the broken file is read, and fails."""
    df = connect_plugin.scan(spark, str(guarded), format="json", columns=["id", "dir0"])
    with pytest.raises(SparkRuntimeException, match=r"b\.json"):
        UNDECIDABLE[condition](df).collect()


def test_a_pruned_query_then_an_unpruned_one_reads_the_excluded_folder(
    spark: SparkSession, guarded: Path
) -> None:
    df = connect_plugin.scan(spark, str(guarded), format="json", columns=["id", "dir0"])
    assert df.where("dir0 = 'good'").count() == 2
    with pytest.raises(SparkRuntimeException, match=r"b\.json"):
        df.collect()
    assert df.where("dir0 = 'good'").count() == 2


def test_hive_columns_prune_by_their_type(spark: SparkSession, hive: Path) -> None:
    df = connect_plugin.scan(spark, str(hive), format="json", partitioning="hive")
    cases: dict[str, Any] = {
        "month = 2": ROWS,
        "month = 2.0": ROWS,
        "month = '2'": ROWS,
        "month < 2.5": 2 * ROWS,
        "month IN (1, 3)": 2 * ROWS,
        "NOT month IN (1, 3)": 2 * ROWS,
        "month <=> NULL": 0,
        "month = NULL": 0,
        "month BETWEEN 2 AND 3": 2 * ROWS,
        "month > -1": MONTHS * ROWS,
    }
    assert {sql: df.where(sql).count() for sql in cases} == cases


def test_a_nested_field_named_like_a_hive_column_is_not_pruned_as_that_column(
    spark: SparkSession, tmp_path: Path
) -> None:
    """After ``select("event.year")`` the name ``year`` is the nested field, not the folder
    column: a filter on it must keep the rows Spark's own reader keeps."""
    for folder, years in (("year=2023", (2023, 2024)), ("year=2024", (2024, 2025))):
        _write(
            tmp_path / folder / "part.json",
            [json.dumps({"id": y * 10 + i, "event": {"year": y}}) for i, y in enumerate(years)],
        )
    scanned = connect_plugin.scan(spark, str(tmp_path), format="json", partitioning="hive")
    reference = spark.read.json(str(tmp_path))
    for df in (scanned, reference):
        df = df.select("event.year", "id").where("year = 2024")
        assert sorted(tuple(r) for r in df.collect()) == [(2024, 20240), (2024, 20241)]


def test_a_held_scan_of_a_temp_table_sees_its_inserts_as_a_held_table_read_does(
    spark: SparkSession,
) -> None:
    """Spark Connect reuses the plan of a read it saw before, file list and all: a scan of
    a temp table kept in a variable must still see the rows an INSERT added in place."""
    spark.sql("CREATE TEMPORARY TABLE grows (id INT) USING json")
    spark.sql("INSERT INTO grows VALUES (1), (2)")
    scanned = connect_plugin.scan(spark, table="grows")
    reference = spark.table("grows")
    for df in (scanned, reference):
        assert df.count() == 2
        assert len(df.collect()) == 2
    spark.sql("INSERT INTO grows VALUES (3)")
    for df in (scanned, reference):
        assert df.count() == 3
        assert sorted(r.id for r in df.collect()) == [1, 2, 3]
        assert df.where("id > 1").count() == 2


def test_a_cached_scan_of_a_temp_table_keeps_its_rows_until_unpersisted(
    spark: SparkSession,
) -> None:
    """A cached scan keeps the rows it read, as a cached read of files does, and its
    ``unpersist()`` finds the cache it made (before an INSERT changed the table's files)."""
    spark.sql("CREATE TEMPORARY TABLE kept (id INT) USING json")
    spark.sql("INSERT INTO kept VALUES (1), (2)")
    df = connect_plugin.scan(spark, table="kept").cache()
    assert df.count() == 2
    spark.sql("INSERT INTO kept VALUES (3)")
    assert df.count() == 2
    assert len(df.collect()) == 2
    df.unpersist()
    assert df.count() == 3
    assert sorted(r.id for r in df.collect()) == [1, 2, 3]


def test_the_readme_reproduction_shows_sparks_stale_reader(direct: SparkSession) -> None:
    """What docs/compatibility.md says of Spark's pushdown, on plain Spark: why the scan takes no filters."""
    blocks = re.findall(r"```python\n(.*?)```", COMPATIBILITY_DOC.read_text(), re.S)
    block = next(b for b in blocks if "class PartsReader" in b)
    namespace: dict[str, Any] = {"spark": direct}
    exec(compile(block, str(COMPATIBILITY_DOC), "exec"), namespace)
    df = namespace["df"]
    assert df.where("part = 2").count() == 1
    assert df.count() == 1, "Spark no longer reuses a pushed-down reader: update docs/compatibility.md"
