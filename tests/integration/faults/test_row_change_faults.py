"""Row changes of temp tables under faults: a gateway killed mid-UPDATE, and clones.

A killed gateway comes back with the table's old version or its new one,
never a mix and no stray folder; a clone's table is its own copy, and a
change on either side never shows on the other.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from pyspark.sql import SparkSession

from tests.integration.faults.gateway_process import (
    BIG_ROWS,
    BIG_TABLE,
    BIG_UPDATE,
    WRITE_START_TIMEOUT_S,
    GatewayProcess,
    join_client,
    wait_until,
    writing,
)
from tests.integration.faults.workspace_check import assert_consistent, workspace_folders


def test_kill_during_an_update_leaves_the_old_table_or_the_new_one(
    gateway_process: GatewayProcess, open_session: Callable[[], SparkSession]
) -> None:
    gateway = gateway_process
    spark = open_session()
    spark.sql(BIG_TABLE)
    outcome: dict[str, object] = {}

    def update() -> None:
        try:
            outcome["rows"] = spark.sql(BIG_UPDATE).collect()
        except Exception as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=update, daemon=True)
    worker.start()

    wait_until(lambda: writing(gateway), WRITE_START_TIMEOUT_S, "Spark to start writing")
    time.sleep(0.2)
    gateway.kill()
    assert worker.is_alive(), "the UPDATE ended before the kill; make BIG_PAUSE longer"
    assert sorted(gateway.rows("SELECT state FROM temp_tables WHERE name = 'big'")) == [
        ("creating",),
        ("ready",),
    ]
    gateway.start()
    join_client(worker, gateway)
    upper = spark.sql("SELECT count_if(h = upper(h)) AS n FROM big").first()
    assert upper is not None
    if "rows" in outcome:
        assert [tuple(r) for r in outcome["rows"]] == [(BIG_ROWS,)]  # type: ignore[attr-defined]
        assert upper.n == BIG_ROWS
    else:
        assert upper.n == 0
    assert_consistent(gateway, {spark: {"big": BIG_ROWS}})
    spark.stop()
    assert workspace_folders(gateway.workspace) == set()


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
