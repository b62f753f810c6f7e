"""CACHE TABLE on a temp table never serves rows the table no longer has.

Spark drops a view's cache when the view is replaced or dropped, which is
how a change, an overwrite, a replace or a DROP of a temp table moves its
view; an INSERT refreshes it.
"""

from __future__ import annotations

from pyspark.sql import SparkSession


def _cached(spark: SparkSession) -> bool:
    return bool(spark.catalog.isCached("t"))


def test_a_cached_table_answers_its_current_rows_after_every_change(spark: SparkSession) -> None:
    spark.sql("CREATE TEMPORARY TABLE t AS SELECT id FROM range(5)")
    for change, count in (
        ("DELETE FROM t WHERE id < 2", 3),
        ("INSERT INTO t VALUES (10)", 4),
        ("UPDATE t SET id = id + 1", 4),
        ("INSERT OVERWRITE t VALUES (1)", 1),
        ("MERGE INTO t USING t s ON t.id = s.id WHEN MATCHED THEN DELETE", 0),
        ("CREATE OR REPLACE TEMPORARY TABLE t AS SELECT 7 AS id", 1),
    ):
        spark.sql("CACHE TABLE t")
        assert _cached(spark)
        spark.sql(change)
        assert spark.table("t").count() == count, change
    spark.sql("CACHE TABLE t")
    spark.sql("DROP TABLE t")
    assert spark.sql("SHOW TEMPORARY TABLES").collect() == []
