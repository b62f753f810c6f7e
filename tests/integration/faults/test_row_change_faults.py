"""Row changes of temp tables in clones: a clone's table is its own copy, and a change on
either side never shows on the other."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import SparkSession

from tests.integration.faults.gateway_process import GatewayProcess
from tests.integration.faults.workspace_check import assert_consistent


def test_a_clone_changes_its_own_copy(
    gateway_process: GatewayProcess,
    open_session: Callable[[], SparkSession],
    clone_session: Callable[..., SparkSession],
) -> None:
    spark = open_session()
    spark.sql("CREATE TEMPORARY TABLE t AS SELECT id FROM range(10)")
    clone = clone_session(spark)
    clone.sql("DELETE FROM t WHERE id < 5")
    spark.sql("UPDATE t SET id = id * 100 WHERE id = 9")
    clone.sql("MERGE INTO t USING (SELECT 7 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert sorted(r.id for r in spark.table("t").collect()) == [*range(9), 900]
    assert sorted(r.id for r in clone.table("t").collect()) == [5, 6, 8, 9]
    assert_consistent(gateway_process, {spark: {"t": 10}, clone: {"t": 4}})
