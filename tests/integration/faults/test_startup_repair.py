"""What a restarted gateway repairs before it serves: unfinished rows, orphans, lost sessions.

Each test lets the gateway create real tables, kills it, then stages on disk
and in the registry (and in the upstream session, through a second client
attached to it) exactly what a crash at a given instant leaves behind.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from connect_plugin.server.embedded import free_port
from tests.integration.faults.gateway_process import GatewayProcess
from tests.integration.faults.workspace_check import assert_consistent, workspace_folders
from tests.integration.support import Upstream

SECOND_GATEWAY_TIMEOUT_S = 120.0


def _user_id(gateway: GatewayProcess, spark: SparkSession) -> str:
    (row,) = gateway.rows(
        "SELECT user_id FROM sessions WHERE session_id = ?", spark.client._session_id
    )
    return str(row[0])


def _stage_row(
    gateway: GatewayProcess,
    user_id: str,
    session_id: str,
    name: str,
    location: Path,
    state: str,
) -> None:
    """A table row as the gateway writes it (``operation_id`` of a write long over)."""
    gateway.write(
        "INSERT INTO sessions VALUES (?, ?, '', 0) ON CONFLICT DO NOTHING", user_id, session_id
    )
    gateway.write(
        "INSERT INTO temp_tables VALUES (?, ?, ?, ?, ?, 'parquet', ?, '[]', '{}', 0, ?, ?, ?, NULL)",
        str(location),
        user_id,
        session_id,
        name,
        name.lower(),
        json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}),
        datetime.datetime.now(datetime.timezone.utc).isoformat(),
        state,
        str(uuid.uuid4()),
    )


@contextmanager
def _attached(upstream: Upstream, spark: SparkSession, user_id: str) -> Iterator[SparkSession]:
    """A second client in the same upstream session, as the gateway's own work is."""
    url = f"{upstream.address}/;session_id={spark.client._session_id}"
    if user_id:
        url += f";user_id={user_id}"
    attached = SparkSession.builder.remote(url).create()
    try:
        yield attached
    finally:
        attached.release_session_on_close = False
        attached.stop()


def test_unfinished_creates_and_drops_are_rolled_back_or_finished(
    gateway_process: GatewayProcess,
    open_session: Callable[[], SparkSession],
    upstream: Upstream,
) -> None:
    gateway = gateway_process
    spark = open_session()
    spark.sql("CREATE TEMPORARY TABLE replaced AS SELECT id FROM range(11)")
    spark.sql("CREATE TEMPORARY TABLE victim AS SELECT id FROM range(3)")
    spark.sql("CREATE TEMPORARY TABLE kept AS SELECT id FROM range(5)")
    user_id = _user_id(gateway, spark)
    session_id = spark.client._session_id
    gateway.kill()

    session = gateway.workspace / session_id
    half_replace = session / str(uuid.uuid4())
    viewed_fresh = session / str(uuid.uuid4())
    with _attached(upstream, spark, user_id) as attached:
        # A CREATE OR REPLACE killed after its view moved, before the row said ready.
        attached.range(99).write.parquet(str(half_replace))
        attached.read.parquet(str(half_replace)).createOrReplaceTempView("replaced")
        # A CTTAS killed between creating its view and marking it ready.
        attached.range(4).write.parquet(str(viewed_fresh))
        attached.read.parquet(str(viewed_fresh)).createOrReplaceTempView("fresh")
        assert attached.table("replaced").count() == 99, "staging: the view moved"
    _stage_row(gateway, user_id, session_id, "replaced", half_replace, "creating")
    _stage_row(gateway, user_id, session_id, "fresh", viewed_fresh, "creating")
    # A DROP killed after the row said dropping.
    gateway.write("UPDATE temp_tables SET state = 'dropping' WHERE name = 'victim'")

    gateway.start()
    log = gateway.log_text()
    assert "Temporary table [replaced] was rolled back" in log
    assert "Temporary table [fresh] was rolled back" in log
    assert "Temporary table [victim] dropped." in log
    assert_consistent(
        gateway, {spark: {"replaced": 11, "kept": 5}}, dead={spark: ["fresh", "victim"]}
    )


def test_sweep_deletes_orphan_session_and_half_written_table_folders(
    gateway_process: GatewayProcess, open_session: Callable[[], SparkSession]
) -> None:
    gateway = gateway_process
    spark = open_session()
    spark.sql("CREATE TEMPORARY TABLE t AS SELECT id FROM range(8)")
    user_id = _user_id(gateway, spark)
    gateway.kill()

    orphan_session = gateway.workspace / str(uuid.uuid4())
    (orphan_session / str(uuid.uuid4())).mkdir(parents=True)
    (orphan_session / "stray-file").write_text("x")
    half_written = gateway.workspace / spark.client._session_id / str(uuid.uuid4())
    (half_written / "_temporary" / "0").mkdir(parents=True)
    (half_written / "_temporary" / "0" / "part-00000.parquet").write_bytes(b"PAR1")
    # A session the upstream never had (or lost): registered, with a table and files.
    lost_session = str(uuid.uuid4())
    lost_table = gateway.workspace / lost_session / str(uuid.uuid4())
    lost_table.mkdir(parents=True)
    (lost_table / "part-00000.parquet").write_bytes(b"PAR1")
    _stage_row(gateway, user_id, lost_session, "t", lost_table, "ready")

    gateway.start()
    log = gateway.log_text()
    assert f"Deleted session temporary location [{orphan_session}]" in log
    assert f"Deleted half-written temporary table location [{half_written}]" in log
    assert f"Deleted session temporary location [{gateway.workspace / lost_session}]" in log
    assert gateway.rows("SELECT * FROM sessions WHERE session_id = ?", lost_session) == []
    assert_consistent(gateway, {spark: {"t": 8}})
    spark.stop()
    assert workspace_folders(gateway.workspace) == set()


def test_a_second_gateway_on_the_same_workspace_is_refused(
    gateway_process: GatewayProcess, tmp_path: Path
) -> None:
    second = dataclasses.replace(
        gateway_process, port=free_port(), log_path=tmp_path / "second.log", process=None
    )
    process = second.spawn()
    try:
        assert process.wait(SECOND_GATEWAY_TIMEOUT_S) == 2
        assert process.stdout is not None
        assert process.stdout.read() == ""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
    assert gateway_process.process is not None
    message = second.log_text()
    assert f"the workspace [{gateway_process.workspace}] is in use by another gateway" in message
    assert f"(pid {gateway_process.process.pid})" in message
    assert gateway_process.running
