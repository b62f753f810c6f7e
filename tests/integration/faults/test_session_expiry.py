"""Idle expiry: sessions with temp tables that nobody uses go, busy ones stay.

The gateway runs as a process of its own with a 2 s idle timeout and a
sweeper every 0.25 s; one client vanishes without releasing its session,
one stays open but idle, one runs a query longer than the timeout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.integration.faults.gateway_process import GatewayProcess, running_gateway, wait_until
from tests.integration.faults.workspace_check import assert_consistent, workspace_folders
from tests.integration.support import Upstream

IDLE_TIMEOUT_S = 2.0
SWEEP_INTERVAL_S = 0.25
LONG_QUERY_MS = 8_000
EXPIRY_WAIT_S = 20.0


@pytest.fixture
def gateway_process(
    upstream: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[GatewayProcess]:
    """The faults package's gateway process, with a short idle timeout."""
    monkeypatch.setenv("CONNECT_PLUGIN_SESSION_IDLE_TIMEOUT_S", str(IDLE_TIMEOUT_S))
    monkeypatch.setenv("CONNECT_PLUGIN_SESSION_SWEEP_INTERVAL_S", str(SWEEP_INTERVAL_S))
    with running_gateway(upstream.address, tmp_path) as process:
        yield process


def _session_rows(
    gateway: GatewayProcess, spark_or_id: SparkSession | str
) -> list[tuple[object, ...]]:
    session_id = spark_or_id if isinstance(spark_or_id, str) else spark_or_id.client._session_id
    return gateway.rows("SELECT * FROM sessions WHERE session_id = ?", session_id) + gateway.rows(
        "SELECT * FROM temp_tables WHERE session_id = ?", session_id
    )


def test_idle_and_vanished_sessions_expire_while_a_long_query_keeps_its_session(
    gateway_process: GatewayProcess, open_session: Callable[[], SparkSession]
) -> None:
    gateway = gateway_process
    vanished, idle, busy = open_session(), open_session(), open_session()
    vanished.sql("CREATE TEMPORARY TABLE v AS SELECT id FROM range(3)")
    idle.sql("CREATE TEMPORARY TABLE i AS SELECT id FROM range(4)")
    busy.sql("CREATE TEMPORARY TABLE b AS SELECT id FROM range(5)")
    vanished_id = vanished.client._session_id
    # The client goes away without a ReleaseSession, as a killed notebook would.
    vanished.release_session_on_close = False
    vanished.stop()
    outcome: dict[str, object] = {}

    def long_query() -> None:
        try:
            outcome["rows"] = busy.sql(
                f"SELECT reflect('java.lang.Thread', 'sleep', {LONG_QUERY_MS}L) AS r"
            ).collect()
        except Exception as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=long_query, daemon=True)
    began = time.monotonic()
    worker.start()

    wait_until(
        lambda: (
            not (gateway.workspace / vanished_id).exists()
            and not (gateway.workspace / idle.client._session_id).exists()
        ),
        EXPIRY_WAIT_S,
        "the idle sessions to expire",
    )
    expired_after = time.monotonic() - began
    assert worker.is_alive(), "the long query ended before the idle sessions expired"
    assert _session_rows(gateway, vanished_id) == []
    assert _session_rows(gateway, idle) == []
    assert (gateway.workspace / busy.client._session_id).is_dir()

    worker.join(EXPIRY_WAIT_S + LONG_QUERY_MS / 1000)
    assert "error" not in outcome, outcome.get("error")
    assert time.monotonic() - began > LONG_QUERY_MS / 1000 > 2 * IDLE_TIMEOUT_S
    assert_consistent(gateway, {busy: {"b": 5}})

    # The idle session was released upstream too: its client is told so.
    with pytest.raises(Exception, match="SESSION_CLOSED"):
        idle.sql("SELECT 1").collect()
    log = gateway.log_text()
    assert f"Session [{vanished_id}] expired after" in log
    assert f"Deleted session temporary location [{gateway.workspace / vanished_id}]" in log
    print(
        f"idle sessions expired {expired_after:.1f} s after going idle (timeout {IDLE_TIMEOUT_S} s)"
    )

    wait_until(
        lambda: not (gateway.workspace / busy.client._session_id).exists(),
        EXPIRY_WAIT_S,
        "the session of the finished query to expire",
    )
    assert workspace_folders(gateway.workspace) == set()
    assert gateway.rows("SELECT * FROM temp_tables") == []
    assert gateway.rows("SELECT * FROM sessions") == []


def test_activity_of_any_rpc_keeps_a_session(
    gateway_process: GatewayProcess, open_session: Callable[[], SparkSession]
) -> None:
    gateway = gateway_process
    spark = open_session()
    spark.sql("CREATE TEMPORARY TABLE kept AS SELECT id FROM range(6)")
    deadline = time.monotonic() + 3 * IDLE_TIMEOUT_S
    while time.monotonic() < deadline:
        spark.conf.get("spark.sql.shuffle.partitions")  # a Config RPC, no plan
        time.sleep(IDLE_TIMEOUT_S / 4)
    assert_consistent(gateway, {spark: {"kept": 6}})
    (last_activity,) = gateway.rows(
        "SELECT last_activity FROM sessions WHERE session_id = ?", spark.client._session_id
    )[0]
    assert time.time() - float(str(last_activity)) < IDLE_TIMEOUT_S, "activity is persisted"
