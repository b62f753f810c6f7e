"""kill -9 of the Spark Connect server, then a restart on the same port.

The test starts a Spark Connect server of its own (the session-wide one
stays up for the other tests) and a gateway process in front of it. While
the upstream is down nothing is deleted; once it is back, the sessions it
lost are found (by a client's call failing with SESSION_CHANGED, or by the
sweeper's probe), their tables deleted, and new sessions work at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.proto.base_pb2_grpc import SparkConnectServiceStub

from connect_plugin.server.embedded import EmbeddedSparkConnect, free_port
from connect_plugin.server.sessions.expiry import UPSTREAM_TIMEOUT_KEY
from tests.integration.faults.gateway_process import running_gateway, wait_until
from tests.integration.faults.workspace_check import assert_consistent, workspace_folders
from tests.integration.support import TEST_SPARK_CONF, new_session

SWEEP_INTERVAL_S = 0.5
UPSTREAM_SESSION_TIMEOUT = ("2h", 7200)
"""Set on the server; the gateway takes it as its idle timeout when none is configured."""
DETECT_WAIT_S = 30.0


def _server(tmp_path: Path, port: int) -> EmbeddedSparkConnect:
    conf = {
        **TEST_SPARK_CONF,
        "spark.sql.warehouse.dir": str(tmp_path / "warehouse"),
        UPSTREAM_TIMEOUT_KEY: UPSTREAM_SESSION_TIMEOUT[0],
    }
    return EmbeddedSparkConnect(
        conf_dir=None, port=port, extra_conf=conf, log_path=tmp_path / "spark-connect.log"
    )


@pytest.fixture
def own_upstream(tmp_path: Path) -> Iterator[list[EmbeddedSparkConnect]]:
    """A Spark Connect server for this test only; the list holds the current incarnation."""
    if os.environ.get("SPARK_REMOTE"):
        pytest.skip("needs an embedded Spark Connect server it may kill")
    servers = [_server(tmp_path, free_port())]
    servers[0].start()
    try:
        yield servers
    finally:
        for server in servers:
            server.stop()


def _kill(server: EmbeddedSparkConnect) -> None:
    """SIGKILL the JVM's whole process group, as a crash of the host would."""
    assert server.pid is not None
    os.killpg(server.pid, signal.SIGKILL)
    server.stop()


def test_sessions_lost_by_an_upstream_restart_are_cleaned_and_new_ones_work(
    own_upstream: list[EmbeddedSparkConnect], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONNECT_PLUGIN_SESSION_SWEEP_INTERVAL_S", str(SWEEP_INTERVAL_S))
    server = own_upstream[0]
    with running_gateway(server.address, tmp_path) as gateway:
        opened: list[SparkSession] = []
        try:
            first, second = new_session(gateway.address), new_session(gateway.address)
            opened += [first, second]
            first.sql("CREATE TEMPORARY TABLE t AS SELECT id FROM range(10)")
            second.sql("CREATE TEMPORARY TABLE u USING json AS SELECT id FROM range(3)")
            lost = [first.client._session_id, second.client._session_id]
            assert_consistent(gateway, {first: {"t": 10}, second: {"u": 3}})
            wait_until(
                lambda: "idle sessions with temporary tables expire after" in gateway.log_text(),
                DETECT_WAIT_S,
                "the gateway to read the upstream's session timeout",
            )
            assert (
                f"idle sessions with temporary tables expire after {UPSTREAM_SESSION_TIMEOUT[1]} s"
                in gateway.log_text()
            )

            _kill(server)
            time.sleep(4 * SWEEP_INTERVAL_S)  # sweeps that cannot reach the upstream
            assert all((gateway.workspace / session_id).is_dir() for session_id in lost)
            assert len(gateway.rows("SELECT * FROM temp_tables WHERE state = 'ready'")) == 2

            restarted = _server(tmp_path, server.port)
            own_upstream.append(restarted)
            restarted.start()
            back = time.monotonic()
            # The client's next call meets an upstream without its session; pyspark gives
            # up on the session (SESSION_NOT_FOUND / SESSION_CHANGED, then NO_ACTIVE_SESSION).
            with pytest.raises(Exception, match=r"SESSION|NO_ACTIVE_SESSION"):
                second.sql("SELECT * FROM u").collect()
            failed_s = time.monotonic() - back
            wait_until(
                lambda: not any((gateway.workspace / session_id).exists() for session_id in lost),
                DETECT_WAIT_S,
                "the lost sessions' folders to be deleted",
            )
            cleaned_s = time.monotonic() - back
            fresh = new_session(gateway.address)
            opened.append(fresh)
            assert fresh.sql("SELECT 1 AS one").first().one == 1  # type: ignore[union-attr]
            first_query_s = time.monotonic() - back - cleaned_s
            fresh.sql("CREATE TEMPORARY TABLE t AS SELECT id FROM range(4)")
            assert fresh.table("t").count() == 4
            new_session_s = time.monotonic() - back - cleaned_s
            for session_id in lost:
                assert gateway.rows("SELECT * FROM sessions WHERE session_id = ?", session_id) == []
            assert_consistent(gateway, {fresh: {"t": 4}})
            assert "no longer exists on the Spark Connect server" in gateway.log_text()
            print(
                f"upstream back: the lost session's client failed after {failed_s:.1f} s, "
                f"lost sessions cleaned after {cleaned_s:.1f} s, "
                f"then a new session's first query took {first_query_s:.1f} s, "
                f"its CTTAS and read {new_session_s:.1f} s in all"
            )
            fresh.stop()
            assert workspace_folders(gateway.workspace) == set()
        finally:
            for session in opened:
                session.release_session_on_close = False
                with contextlib.suppress(Exception):
                    session.stop()


def _raw_sql(address: str, session_id: str, user_id: str, query: str) -> None:
    """Run ``query`` as a bare gRPC client: one ExecutePlan, no other call, no observed id."""
    request = spark_proto.ExecutePlanRequest(session_id=session_id, operation_id=str(uuid.uuid4()))
    request.user_context.user_id = user_id
    request.plan.command.sql_command.input.sql.query = query
    with grpc.insecure_channel(address.removeprefix("sc://")) as channel:
        for _ in SparkConnectServiceStub(channel).ExecutePlan(request):
            pass


def test_a_reused_session_id_after_an_upstream_restart_drops_the_old_tables(
    own_upstream: list[EmbeddedSparkConnect], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that does not say which server-side session it saw gets no SESSION_CHANGED.

    The sweeper is kept out of the way and the client's first call is the
    CTTAS, so the CTTAS itself must notice that the upstream session behind
    the id is a new one.
    """
    monkeypatch.setenv("CONNECT_PLUGIN_SESSION_SWEEP_INTERVAL_S", "3600")
    server = own_upstream[0]
    with running_gateway(server.address, tmp_path) as gateway:
        first = new_session(gateway.address)
        first.sql("CREATE TEMPORARY TABLE old AS SELECT id FROM range(10)")
        session_id, user_id = first.client._session_id, first.client._user_id or ""
        (old_folder,) = (gateway.workspace / session_id).iterdir()
        # Gone without a release, and with no call (pyspark's background ReleaseExecute) pending.
        first.release_session_on_close = False
        first.stop()

        _kill(server)
        restarted = _server(tmp_path, server.port)
        own_upstream.append(restarted)
        restarted.start()
        _raw_sql(
            gateway.address, session_id, user_id, "CREATE TEMPORARY TABLE new AS SELECT 1 AS x"
        )

        assert "is a new one on the Spark Connect server" in gateway.log_text()
        assert not old_folder.exists()
        reused = SparkSession.builder.remote(f"{gateway.address}/;session_id={session_id}").create()
        try:
            assert_consistent(gateway, {reused: {"new": 1}}, dead={reused: ["old"]})
        finally:
            reused.stop()
        assert workspace_folders(gateway.workspace) == set()
