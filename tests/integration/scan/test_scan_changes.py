"""A DataFrame of ``scan()`` whose files change: its columns stay, its rows follow the files.

The columns are those of the scan's first plan (``df.columns``, or its
first action); every later query of the DataFrame, a filter that prunes
files or a count the gateway rewrites included, keeps them, with nulls for
a column no file left has and without the columns of files added since
(rescued under ``evolution="rescue"``); its rows come from the files there
are at the query (issue 44). Through the stock pyspark client, the gateway
and a real Spark Connect server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

import connect_plugin
from tests.unit.scanning.scan_checks import write_json


def months(root: Path) -> Path:
    """``month=3/a.json`` with ``id, qty`` and ``month=4/b.json`` with ``id, name``."""
    write_json(root / "month=3" / "a.json", [{"id": 1, "qty": 5}])
    write_json(root / "month=4" / "b.json", [{"id": 2, "name": "b"}])
    return root


def change(root: Path) -> None:
    """a.json goes (the only file with ``qty``); ``month=4/c.json`` comes with ``extra``."""
    (root / "month=3" / "a.json").unlink()
    write_json(root / "month=4" / "c.json", [{"id": 3, "extra": "e"}])


def rows(df: DataFrame) -> list[dict[str, Any]]:
    found = [row.asDict() for row in df.collect()]
    return sorted(found, key=lambda r: r["id"])


def rescued(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    values: dict[str, Any] = json.loads(text)
    values.pop("_file_path")
    return values


def test_a_pruned_query_after_a_change_keeps_the_columns(
    spark: SparkSession, tmp_path: Path
) -> None:
    root = months(tmp_path / "data")
    df = connect_plugin.scan(spark, str(root), format="json", partitioning="hive")
    assert df.columns == ["id", "qty", "name", "month"]
    planned = df.dtypes
    change(root)
    pruned = df.where("month = 4")
    assert pruned.dtypes == planned
    assert rows(pruned) == [
        {"id": 2, "qty": None, "name": "b", "month": 4},
        {"id": 3, "qty": None, "name": None, "month": 4},
    ]
    assert rows(df.where("month = 4 AND qty IS NULL").select("id", "qty")) == [
        {"id": 2, "qty": None},
        {"id": 3, "qty": None},
    ]
    assert rows(df) == rows(pruned)
    assert df.dtypes == planned


def test_counts_and_a_filter_of_no_file_after_a_change(spark: SparkSession, tmp_path: Path) -> None:
    root = months(tmp_path / "data")
    df = connect_plugin.scan(spark, str(root), format="json", partitioning="hive")
    assert df.count() == 2
    change(root)
    assert df.count() == 2
    assert df.where("month = 4").count() == 2
    assert df.where("month = 3").count() == 0
    gone = df.where("month = 3")
    assert gone.columns == ["id", "qty", "name", "month"]
    assert gone.collect() == []
    assert df.where("qty > 0").collect() == []
    assert df.columns == ["id", "qty", "name", "month"]


def test_rescue_keeps_the_first_files_columns_after_a_change(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The first file fixed ``id, qty``: gone, it still fixes them; the rest is rescued."""
    root = months(tmp_path / "data")
    df = connect_plugin.scan(
        spark, str(root), format="json", partitioning="hive", evolution="rescue"
    )
    assert df.columns == ["id", "qty", "month", "_rescued_data"]
    change(root)
    found = rows(df.where("month = 4 AND qty IS NULL"))
    assert [(r["id"], r["qty"], r["month"]) for r in found] == [(2, None, 4), (3, None, 4)]
    assert [rescued(r["_rescued_data"]) for r in found] == [{"name": "b"}, {"extra": "e"}]
    assert df.where("month = 4").count() == 2


def test_no_evolution_ignores_the_new_files_columns_after_a_change(
    spark: SparkSession, tmp_path: Path
) -> None:
    root = months(tmp_path / "data")
    df = connect_plugin.scan(spark, str(root), format="json", partitioning="hive", strict=True)
    assert df.columns == ["id", "qty", "month"]
    change(root)
    assert rows(df.where("month = 4 AND qty IS NULL")) == [
        {"id": 2, "qty": None, "month": 4},
        {"id": 3, "qty": None, "month": 4},
    ]


def test_the_first_action_fixes_the_columns(spark: SparkSession, tmp_path: Path) -> None:
    """No ``df.columns`` before: the first query, pruned, plans the scan over every file."""
    root = months(tmp_path / "data")
    df = connect_plugin.scan(spark, str(root), format="json", partitioning="hive")
    assert rows(df.where("month = 3")) == [{"id": 1, "qty": 5, "name": None, "month": 3}]
    change(root)
    assert df.columns == ["id", "qty", "name", "month"]
    assert [r["id"] for r in rows(df.where("month = 4"))] == [2, 3]


def test_each_scan_call_keeps_its_own_columns(spark: SparkSession, tmp_path: Path) -> None:
    """A new ``scan()`` of the same folder plans anew: the files there are then."""
    root = months(tmp_path / "data")
    before = connect_plugin.scan(spark, str(root), format="json", partitioning="hive")
    assert before.columns == ["id", "qty", "name", "month"]
    change(root)
    after = connect_plugin.scan(spark, str(root), format="json", partitioning="hive")
    assert after.columns == ["id", "name", "extra", "month"]
    assert rows(after.where("month = 4")) == [
        {"id": 2, "name": "b", "extra": None, "month": 4},
        {"id": 3, "name": None, "extra": "e", "month": 4},
    ]
    assert before.where("month = 4").columns == ["id", "qty", "name", "month"]
    assert [r["qty"] for r in rows(before.where("month = 4"))] == [None, None]


def test_a_table_scan_reads_rows_inserted_since(spark: SparkSession) -> None:
    """A temp table's scan keeps its columns and reads what INSERT added, pruned or not."""
    spark.sql("CREATE TEMPORARY TABLE kept_cols AS SELECT 1 AS id, 'a' AS name").collect()
    try:
        df = connect_plugin.scan(spark, table="kept_cols")
        assert df.columns == ["id", "name"]
        spark.sql("INSERT INTO kept_cols VALUES (2, 'b')").collect()
        assert sorted(r["id"] for r in df.where("id > 0").collect()) == [1, 2]
        assert df.count() == 2
    finally:
        spark.sql("DROP TABLE IF EXISTS kept_cols").collect()
