"""A session's Python worker daemons go when the session goes, and idle ones are stopped.

Spark 4.0-4.3 keep every session's Python worker daemons (three or four per
scanning session) until the server stops. A gateway whose Spark runs on this
machine (``stop_python_workers``, set by ``--local``) stops them when a
session ends, and stops any daemon that has had no worker for
``python_worker_idle_s``; Spark starts a new daemon when a live session
needs one again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import connect_plugin
from connect_plugin.server.python_workers import daemons
from tests.integration.support import Upstream, new_session, serving

SESSIONS = 30
SETTLE_S = 30.0


def _used_memory() -> int:
    """The machine's used memory in bytes: total less available."""
    fields = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, value = line.split(":", 1)
        fields[name] = int(value.split()[0]) * 1024
    return fields["MemTotal"] - fields["MemAvailable"]


def _until(condition: Callable[[], bool], timeout_s: float = SETTLE_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.5)
    return condition()


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workers")
    for index in range(4):
        lines = (json.dumps({"id": i, "part": index}) for i in range(1000))
        (root / f"{index}.json").write_text("\n".join(lines) + "\n")
    return root


def _scan_once(address: str, data: Path) -> str:
    """A session that scans and ends; its server-side id."""
    spark = new_session(address)
    try:
        assert connect_plugin.scan(spark, str(data), format="json").count() == 4000
        server_side: str = spark.client._server_session_id
    finally:
        spark.stop()
    return server_side


def test_thirty_scanning_sessions_give_their_processes_and_memory_back(
    upstream: Upstream, data: Path, tmp_path: Path
) -> None:
    if not upstream.embedded:
        pytest.skip("the Spark Connect server runs elsewhere: its Python workers are not here")
    with serving(upstream, tmp_path / "ws", python_worker_idle_s=0) as gateway:
        _scan_once(gateway.address, data)
        before = {d.pid for d in daemons()}
        memory = _used_memory()
        ended = [_scan_once(gateway.address, data) for _ in range(SESSIONS)]
        assert _until(lambda: not {d.session for d in daemons()} & set(ended))
        assert len(daemons()) <= len(before)
    used = _used_memory()
    assert used <= memory * 1.10, f"used memory {used:,} B after {memory:,} B before"


def test_an_idle_daemon_stops_and_its_live_session_scans_on(
    upstream: Upstream, data: Path, tmp_path: Path
) -> None:
    if not upstream.embedded:
        pytest.skip("the Spark Connect server runs elsewhere: its Python workers are not here")
    with serving(upstream, tmp_path / "ws", python_worker_idle_s=2) as gateway:
        spark = new_session(gateway.address)
        try:
            scan = connect_plugin.scan(spark, str(data), format="json")
            assert scan.count() == 4000
            mine = spark.client._server_session_id
            assert any(d.session == mine for d in daemons())
            assert _until(lambda: not any(d.session == mine for d in daemons()), 90.0)
            assert scan.where("part = 2").count() == 1000
        finally:
            spark.stop()
