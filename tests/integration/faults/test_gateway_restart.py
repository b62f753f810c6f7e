"""kill -9 of the gateway, between statements and in the middle of a CTTAS.

The gateway runs as a process of its own in front of the session's Spark
Connect server and is restarted on the same port and workspace; the client is
the stock pyspark one, whose SparkSession reconnects by itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from pyspark.sql import SparkSession

from tests.integration.faults.gateway_process import (
    BIG_CTTAS,
    BIG_ROWS,
    WRITE_START_TIMEOUT_S,
    GatewayProcess,
    join_client,
    wait_until,
    writing,
)
from tests.integration.faults.workspace_check import assert_consistent, workspace_folders


def test_kill_between_statements_keeps_every_live_table(
    gateway_process: GatewayProcess, open_session: Callable[[], SparkSession]
) -> None:
    gateway = gateway_process
    spark, other = open_session(), open_session()
    spark.sql("CREATE TEMPORARY TABLE kept AS SELECT id FROM range(1000)")
    spark.sql(
        "CREATE TEMPORARY TABLE parts USING csv PARTITIONED BY (k) AS "
        "SELECT id, CAST(id % 3 AS INT) AS k FROM range(30)"
    )
    spark.sql("CREATE TEMPORARY TABLE gone AS SELECT 1 AS x")
    spark.sql("DROP TABLE gone")
    other.sql("CREATE TEMPORARY TABLE kept AS SELECT id FROM range(5)")

    gateway.kill()
    gateway.start()
    assert_consistent(
        gateway, {spark: {"kept": 1000, "parts": 30}, other: {"kept": 5}}, dead={spark: ["gone"]}
    )
    assert spark.sql("SELECT sum(id) AS s FROM kept JOIN parts USING (id)").first().s == 435  # type: ignore[union-attr]

    spark.sql("DROP TABLE parts")
    spark.sql("CREATE OR REPLACE TEMPORARY TABLE kept AS SELECT id FROM range(7)")
    other.sql("CREATE TEMPORARY TABLE later USING json AS SELECT 'x' AS s")
    assert_consistent(
        gateway,
        {spark: {"kept": 7}, other: {"kept": 5, "later": 1}},
        dead={spark: ["parts", "gone"]},
    )

    gateway.kill()
    gateway.start()
    assert_consistent(gateway, {spark: {"kept": 7}, other: {"kept": 5, "later": 1}})
    released = spark.client._session_id
    spark.stop()
    assert not (gateway.workspace / released).exists()
    assert gateway.rows("SELECT * FROM temp_tables WHERE session_id = ?", released) == []
    assert gateway.rows("SELECT * FROM sessions WHERE session_id = ?", released) == []
    assert_consistent(gateway, {other: {"kept": 5, "later": 1}})
    assert "Deleted session temporary location" in gateway.log_text()


def test_kill_during_cttas_leaves_the_table_absent_or_complete(
    gateway_process: GatewayProcess, open_session: Callable[[], SparkSession]
) -> None:
    gateway = gateway_process
    spark = open_session()
    spark.sql("CREATE TEMPORARY TABLE small AS SELECT id FROM range(10)")
    outcome: dict[str, object] = {}

    def create_big() -> None:
        try:
            outcome["rows"] = spark.sql(BIG_CTTAS).collect()
        except Exception as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=create_big, daemon=True)
    worker.start()
    session_folder = gateway.workspace / spark.client._session_id

    wait_until(lambda: writing(gateway), WRITE_START_TIMEOUT_S, "Spark to start writing the big table")
    time.sleep(0.2)
    gateway.kill()
    assert worker.is_alive(), "the CTTAS ended before the kill; make BIG_PAUSE longer"
    assert gateway.rows("SELECT name, state FROM temp_tables WHERE name = 'big'") == [
        ("big", "creating")
    ]
    assert len([p for p in session_folder.iterdir()]) == 2, "small and the half-written big"

    gateway.start()
    join_client(worker, gateway)
    log = gateway.log_text()
    assert "Temporary table [big] was rolled back" in log
    if "rows" in outcome:
        # The client saw no response before the kill, so it sent the statement again.
        assert [tuple(r) for r in outcome["rows"]] == [("big", BIG_ROWS)]  # type: ignore[attr-defined]
        assert_consistent(gateway, {spark: {"small": 10, "big": BIG_ROWS}})
    else:
        assert_consistent(gateway, {spark: {"small": 10}}, dead={spark: ["big"]})
    spark.stop()
    assert workspace_folders(gateway.workspace) == set()
    assert gateway.rows("SELECT * FROM temp_tables") == []
