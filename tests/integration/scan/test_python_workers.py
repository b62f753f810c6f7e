"""A session's Python worker daemons go when the session goes, and idle ones are stopped.

Spark 4.0-4.3 keep every session's Python worker daemons (three or four per
scanning session) until the server stops. A gateway whose Spark runs on this
machine (``stop_python_workers``, set by ``--local``) stops them when a
session ends (whether it scanned or ran Python of its own), and ``--local``
stops its embedded server's daemons that have had no worker for
``python_worker_idle_s``; Spark starts a new daemon when a live session
needs one again.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql.datasource import DataSource, DataSourceReader

import connect_plugin
from connect_plugin.spark_processes.python_daemons import IdleDaemons, daemons, descendants
from tests.integration.support import Upstream, embedded_jvm, json_parts, new_session, serving

SESSIONS = 30
WARM_UP_SESSIONS = 5
"""Sessions before the measure starts: the JVM's heap grows over its first queries and
keeps what it took, which is Spark's and not what this test is about."""
SETTLE_S = 30.0


def _python_memory(jvm: int) -> int:
    """The resident bytes of the processes the Spark JVM started (its Python worker daemons,
    their workers, the fork server), not the JVM: the machine's used memory also counts the
    other test worker's Spark and sessions, which come and go meanwhile."""
    total = 0
    for pid in descendants(jvm):
        with contextlib.suppress(OSError, AssertionError):
            total += _resident(pid)
    return total


def _until(condition: Callable[[], bool], timeout_s: float = SETTLE_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.5)
    return condition()


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return json_parts(tmp_path_factory.mktemp("workers"), 4, 1000)


def _scan_once(address: str, data: Path) -> str:
    """A session that scans and ends; its server-side id."""
    spark = new_session(address)
    try:
        assert connect_plugin.scan(spark, str(data), format="json").count() == 4000
        server_side: str = spark.client._server_session_id
    finally:
        spark.stop()
    return server_side


def _resident(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"process {pid} has no resident size")


def test_ended_sessions_give_their_processes_and_memory_back_and_a_live_ones_idle_daemon_stops(
    upstream: Upstream, data: Path, tmp_path: Path
) -> None:
    """Thirty scanning sessions end: the memory of the Python processes under Spark's JVM
    is back within 10 % (the JVM's heap is Spark's: it sizes it by its collector, not by
    sessions, and keeps it). Meanwhile the sweep ``serve --local`` runs beside its embedded server
    (here beside the test session's) waits out Spark's minute before it stops a live
    session's idle workers: then that session's idle daemon stops, and its next scan gets
    new ones."""
    if not upstream.embedded:
        pytest.skip("the Spark Connect server runs elsewhere: its Python workers are not here")
    jvm = embedded_jvm(upstream)
    stop = threading.Event()
    sweeps = threading.Thread(target=IdleDaemons(2.0, under=jvm).run, args=(lambda: True, stop))
    with serving(upstream, tmp_path / "live") as gateway:
        live = new_session(gateway.address)
        sweeps.start()
        try:
            scan = connect_plugin.scan(live, str(data), format="json")
            assert scan.count() == 4000
            mine = live.client._server_session_id
            assert any(d.session == mine for d in daemons(under=jvm))
            _thirty_sessions_give_back(upstream, data, tmp_path / "ended", jvm)
            assert _until(lambda: not any(d.session == mine for d in daemons()), 90.0)
            assert scan.where("part = 2").count() == 1000
        finally:
            stop.set()
            sweeps.join()
            live.stop()


def _thirty_sessions_give_back(upstream: Upstream, data: Path, workspace: Path, jvm: int) -> None:
    with serving(upstream, workspace) as gateway:
        for _ in range(WARM_UP_SESSIONS):
            _scan_once(gateway.address, data)
        before = {d.pid for d in daemons(under=jvm)}
        memory = _python_memory(jvm)
        assert memory > 0, "the live session's daemons are under Spark's JVM"
        ended = [_scan_once(gateway.address, data) for _ in range(SESSIONS)]
        assert _until(lambda: not {d.session for d in daemons()} & set(ended))
        assert len(daemons(under=jvm)) <= len(before), "the other test worker's are not counted"
    used = _python_memory(jvm)
    assert used <= memory * 1.10, f"Python processes under Spark: {used:,} B after {memory:,} B"


def _one_row_source() -> type[DataSource]:
    """A Python data source of the user's own (defined here, so that workers get it by value)."""

    class OneRowReader(DataSourceReader):
        def read(self, partition: object) -> Iterator[tuple[int]]:
            yield (1,)

    class OneRow(DataSource):
        @classmethod
        def name(cls) -> str:
            return "one_row"

        def schema(self) -> str:
            return "id INT"

        def reader(self, schema: object) -> DataSourceReader:
            return OneRowReader()

    return OneRow


def test_a_session_that_never_scanned_gives_its_processes_back(
    upstream: Upstream, tmp_path: Path
) -> None:
    """Python workers of the user's own data source: the gateway learns the session's
    server-side id when it is released."""
    if not upstream.embedded:
        pytest.skip("the Spark Connect server runs elsewhere: its Python workers are not here")
    with serving(upstream, tmp_path / "ws") as gateway:
        spark = new_session(gateway.address)
        try:
            source = _one_row_source()
            spark.dataSource.register(source)
            assert spark.read.format(source.name()).load().count() == 1
            mine = spark.client._server_session_id
            assert any(d.session == mine for d in daemons())
        finally:
            spark.stop()
        assert _until(lambda: not any(d.session == mine for d in daemons()))
