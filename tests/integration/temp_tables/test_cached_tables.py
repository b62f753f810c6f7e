"""CACHE TABLE on a temp table never serves rows the table no longer has.

Spark drops a view's cache when the view is replaced or dropped, which is
how a change, an overwrite, a replace or a DROP of a temp table moves its
view; an INSERT refreshes it. Releasing a session uncaches its tables.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from connect_plugin.server.gateway import Gateway
from tests.integration.support import Upstream, new_session, table_folders


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


def test_release_uncaches_the_sessions_tables(
    gateway: Gateway, upstream: Upstream, workspace: Path
) -> None:
    """Spark keeps a released session's cached plans (SPARK-50569); the gateway uncaches them.

    The cache is Spark's, shared by all its sessions, and only the view's plan
    finds its entry: a clone made on Spark itself (not through the gateway)
    holds the same view, so it sees the entry while the table lives, and must
    not once the gateway released the original session.
    """
    spark = new_session(gateway.address)
    observer = None
    try:
        spark.sql("CREATE TEMPORARY TABLE t USING parquet AS SELECT id FROM range(5)")
        spark.sql("CACHE TABLE t")
        same = new_session(f"{upstream.address}/;session_id={spark.client._session_id}")
        observer = same.cloneSession()
        same.client.close()
        assert observer.catalog.isCached("t"), "the clone does not see the cached table"
    finally:
        spark.stop()
    try:
        assert table_folders(workspace, spark) == []
        assert not observer.catalog.isCached("t"), "the released session's table is still cached"
    finally:
        observer.stop()
