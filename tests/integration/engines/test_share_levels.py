"""Share levels user and group: each owner's sessions on a Spark Connect server of its own.

Every test starts its own gateway, whose engines are real Spark Connect JVMs
with small heaps, and checks at its end that none of them is left running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from connect_plugin.server.engine_process import GATEWAY_SETTING, process_mark, stop_strays
from connect_plugin.server.gateway import Gateway
from tests.integration.engines.support import (
    ENGINE_MEMORY,
    TOKENS,
    engines_gateway,
    session_of,
    tokens_file,
)
from tests.integration.support import Upstream, spark_connect_server_pids

IDLE_WAIT_S = 60.0
GROUP_EXIT_S = 10.0
"""How long killed processes may take to be gone from ``/proc`` (reaped by init)."""


def _group(pgid: int) -> set[int]:
    """The processes of process group ``pgid`` (an engine's JVM and what it started)."""
    members = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    members.add(int(entry.name))
            except OSError:
                continue
    return members


def _module(folder: Path) -> Path:
    path = folder / "engine_artifact.py"
    path.write_text("VALUE = 1\n")
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_two_users_get_two_engines_and_their_same_named_tables_differ(tmp_path: Path) -> None:
    with (
        engines_gateway(tmp_path) as gateway,
        session_of(gateway, "alice") as alice,
        session_of(gateway, "bob") as bob,
    ):
        alice.sql("CREATE TEMPORARY TABLE t AS SELECT 'alice' AS who, id FROM range(3)")
        bob.sql("CREATE TEMPORARY TABLE t AS SELECT 'bob' AS who, id FROM range(5)")
        assert {r.who for r in alice.table("t").collect()} == {"alice"}
        assert alice.table("t").count() == 3
        assert {r.who for r in bob.table("t").collect()} == {"bob"}
        assert bob.table("t").count() == 5
        assert gateway.engines is not None
        pids = gateway.engines.pids()
        assert set(pids) == {"alice", "bob"}
        assert pids["alice"] != pids["bob"]
        assert set(pids.values()) <= spark_connect_server_pids(str(tmp_path))
        # Each engine names its gateway, so a next gateway tells strays from these.
        words = Path(f"/proc/{pids['alice']}/cmdline").read_bytes().split(b"\0")
        assert f"{GATEWAY_SETTING}={process_mark()}".encode() in words
        assert stop_strays(tmp_path / "state") == []
        # Spark state is each engine's own: a view of alice's is nowhere in bob's Spark.
        alice.range(1).createOrReplaceTempView("only_alices")
        assert "only_alices" not in {t.name for t in bob.catalog.listTables()}
        alice.sql("DROP TABLE t")
        assert bob.table("t").count() == 5
        bob.client.release_session()
        alice.client.release_session()


def test_group_members_share_their_groups_engine_and_a_user_in_no_group_is_refused(
    tmp_path: Path,
) -> None:
    groups = {"alice": "analysts", "carol": "analysts"}
    with (
        engines_gateway(tmp_path, groups, share_level="group") as gateway,
        session_of(gateway, "alice") as alice,
        session_of(gateway, "carol") as carol,
    ):
        assert alice.range(3).count() == 3
        assert carol.range(4).count() == 4
        assert gateway.engines is not None
        assert set(gateway.engines.pids()) == {"analysts"}
        # A result over the engine's stream size is reattached to, through the gateway.
        rows = alice.range(100_000).selectExpr("id", "repeat('x', 40) AS pad").collect()
        assert len(rows) == 100_000
        assert gateway.calls("ReattachExecute") > 0
        alice.sql("CREATE TEMPORARY TABLE cloned AS SELECT id FROM range(6)")
        clone = alice.cloneSession()
        try:
            assert clone.table("cloned").count() == 6
            clone.addArtifacts(str(_module(tmp_path)), pyfile=True)
            assert clone.range(1).selectExpr("id + 1").collect()[0][0] == 1
            assert gateway.calls("AddArtifacts") > 0
            assert gateway.calls("CloneSession") == 1
        finally:
            clone.stop()
        assert alice.table("cloned").count() == 6
        with session_of(gateway, "bob") as bob, pytest.raises(PySparkException) as refused:
            bob.range(1).collect()
        text = str(refused.value)
        assert "CONNECT_PLUGIN.NO_ENGINE" in text
        assert "'bob' is in no group" in text
        assert set(gateway.engines.pids()) == {"analysts"}


def test_over_max_engines_a_new_user_is_refused_and_running_engines_go_on(
    tmp_path: Path,
) -> None:
    with (
        engines_gateway(tmp_path, max_engines=1) as gateway,
        session_of(gateway, "alice") as alice,
    ):
        alice.sql("CREATE TEMPORARY TABLE kept AS SELECT id FROM range(7)")
        with session_of(gateway, "bob") as bob, pytest.raises(PySparkException) as refused:
            bob.range(1).collect()
        text = str(refused.value)
        assert "CONNECT_PLUGIN.QUOTA_EXCEEDED" in text
        assert "max_engines" in text
        assert refused.value.getGrpcStatusCode() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
        assert alice.table("kept").count() == 7
        assert gateway.engines is not None
        assert set(gateway.engines.pids()) == {"alice"}


def _scraped(gateway: Gateway) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    assert gateway.metrics is not None
    text = urllib.request.urlopen(f"http://127.0.0.1:{gateway.metrics.port}/metrics").read()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text.decode())
        for sample in family.samples
    }


def test_an_idle_engine_stops_and_the_next_call_starts_a_new_one(tmp_path: Path) -> None:
    with engines_gateway(tmp_path, engine_idle_timeout_s=2.0, metrics_port=0) as gateway:
        assert gateway.engines is not None
        with session_of(gateway, "alice") as alice:
            assert alice.range(5).count() == 5
            first = gateway.engines.pids()["alice"]
        deadline = time.monotonic() + IDLE_WAIT_S
        while not gateway.engines.stops and time.monotonic() < deadline:
            time.sleep(0.5)
        assert gateway.engines.stops == {"idle": 1}
        assert gateway.engines.pids() == {}
        assert not _alive(first)
        with session_of(gateway, "alice") as alice:
            assert alice.range(6).count() == 6
            second = gateway.engines.pids()["alice"]
        assert second != first
        assert gateway.engines.starts == 2
        metrics = _scraped(gateway)
        assert metrics[("connect_plugin_engine_starts_total", ())] == 2
        assert metrics[("connect_plugin_engine_stops_total", (("reason", "idle"),))] == 1
        assert metrics[("connect_plugin_engines", (("state", "running"),))] == 1
        assert metrics[("connect_plugin_engines", (("state", "starting"),))] == 0
        assert metrics[("connect_plugin_engine_start_duration_seconds_count", ())] == 2
        assert not any("alice" in str(labels) for _, labels in metrics)


def test_an_engine_holding_temp_tables_is_not_idle(tmp_path: Path) -> None:
    with (
        engines_gateway(tmp_path, engine_idle_timeout_s=1.0) as gateway,
        session_of(gateway, "alice") as alice,
    ):
        alice.sql("CREATE TEMPORARY TABLE held AS SELECT id FROM range(4)")
        time.sleep(4.0)
        assert gateway.engines is not None
        assert set(gateway.engines.pids()) == {"alice"}
        assert alice.table("held").count() == 4


def test_an_owner_named_in_engines_goes_to_that_server_and_no_engine_starts_for_it(
    tmp_path: Path, upstream: Upstream
) -> None:
    with (
        engines_gateway(tmp_path, engines=(f"bob={upstream.address}",)) as gateway,
        session_of(gateway, "bob") as bob,
    ):
        bob.sql("CREATE TEMPORARY TABLE on_static AS SELECT id FROM range(3)")
        assert bob.table("on_static").count() == 3
        assert gateway.engines is not None
        assert gateway.engines.pids() == {}
        assert gateway.engines.starts == 0
        session_id = bob.client._session_id
        attached = SparkSession.builder.remote(
            f"{upstream.address}/;session_id={session_id};user_id=bob"
        ).create()
        try:
            views = {t.name for t in attached.catalog.listTables() if t.isTemporary}
        finally:
            attached.client.close()
        assert "on_static" in views


def test_a_killed_engine_ends_its_sessions_cleanly_and_the_other_users_go_on(
    tmp_path: Path,
) -> None:
    with (
        engines_gateway(tmp_path) as gateway,
        session_of(gateway, "alice") as alice,
        session_of(gateway, "bob") as bob,
    ):
        assert gateway.engines is not None
        assert gateway.sessions is not None
        alice.sql("CREATE TEMPORARY TABLE lost AS SELECT id FROM range(5)")
        bob.sql("CREATE TEMPORARY TABLE kept AS SELECT id FROM range(6)")
        alices_folder = tmp_path / "workspace" / alice.client._session_id
        assert any(alices_folder.iterdir())
        victim = gateway.engines.pids()["alice"]
        bobs = gateway.engines.pids()["bob"]

        stop = threading.Event()
        counts: list[int] = []
        errors: list[BaseException] = []

        def bob_queries() -> None:
            while not stop.is_set():
                try:
                    counts.append(bob.table("kept").count())
                except BaseException as exc:
                    errors.append(exc)
                    return

        runner = threading.Thread(target=bob_queries)
        runner.start()
        try:
            os.kill(victim, signal.SIGKILL)
            deadline = time.monotonic() + IDLE_WAIT_S
            while gateway.engines.stops.get("exited") != 1 and time.monotonic() < deadline:
                time.sleep(0.2)
            while gateway.sessions.find("alice", alice.client._session_id) is not None:
                assert time.monotonic() < deadline, "alice's session was not ended"
                time.sleep(0.2)
            time.sleep(1.0)
        finally:
            stop.set()
            runner.join()
        assert errors == []
        group_deadline = time.monotonic() + GROUP_EXIT_S
        while _group(victim) and time.monotonic() < group_deadline:
            time.sleep(0.2)
        assert _group(victim) == set()
        assert counts
        assert set(counts) == {6}
        assert not alices_folder.exists()
        assert gateway.engines.pids() == {"bob": bobs}
        with pytest.raises(PySparkException) as closed:
            alice.table("lost").count()
        text = str(closed.value)
        assert "CONNECT_PLUGIN.SESSION_CLOSED" in text
        assert f"(pid {victim}) exited" in text
        with session_of(gateway, "alice") as again:
            assert again.range(4).count() == 4
            assert gateway.engines.pids()["alice"] != victim
        assert bob.table("kept").count() == 6


def test_a_gateway_restart_stops_its_engines_and_the_next_one_starts_afresh(
    tmp_path: Path,
) -> None:
    with engines_gateway(tmp_path) as gateway:
        alice = SparkSession.builder.remote(
            f"sc://localhost:{gateway.port}/;token={TOKENS['alice']}"
        ).create()
        try:
            alice.sql("CREATE TEMPORARY TABLE before_restart AS SELECT id FROM range(3)")
            session_id = alice.client._session_id
            assert gateway.engines is not None
            first = gateway.engines.pids()["alice"]
            gateway.stop()
            assert not _alive(first)
        finally:
            # The session outlives its gateway: closed without a release, which would wait
            # for the stopped gateway through pyspark's retries.
            alice.client.close()
    with engines_gateway(tmp_path) as gateway:
        assert gateway.sessions is not None
        assert gateway.sessions.find("alice", session_id) is None
        assert not (tmp_path / "workspace" / session_id).exists()
        with session_of(gateway, "alice") as alice:
            assert alice.sql("SHOW TEMPORARY TABLES").count() == 0
            assert alice.range(2).count() == 2


def test_engines_of_a_gateway_killed_outright_are_stopped_by_the_next_one(
    tmp_path: Path,
) -> None:
    command = [
        sys.executable, "-m", "connect_plugin.cli", "serve", "--local",
        "--share-level", "user", "--auth-tokens", str(tokens_file(tmp_path)),
        "--port", "0", "--workspace", str(tmp_path / "workspace"),
        "--state-dir", str(tmp_path / "state"), "--no-warm-up", "--no-class-archive",
        "--engine-memory", ENGINE_MEMORY,
    ]  # fmt: skip
    with (tmp_path / "gateway.log").open("w") as log:
        killed = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True
        )
    try:
        assert killed.stdout is not None
        ready = killed.stdout.readline()
        port = int(ready.rsplit(":", 1)[1])
        alice = SparkSession.builder.remote(
            f"sc://localhost:{port}/;token={TOKENS['alice']}"
        ).create()
        try:
            assert alice.range(3).count() == 3
        finally:
            alice.client.close()
        (left,) = spark_connect_server_pids(str(tmp_path))
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
        if killed.stdout is not None:
            killed.stdout.close()
    assert _alive(left)
    with engines_gateway(tmp_path) as gateway:
        assert gateway.engines is not None
        assert gateway.engines.strays == [left]
        deadline = time.monotonic() + GROUP_EXIT_S
        while _alive(left) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(left)
