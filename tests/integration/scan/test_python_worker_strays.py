"""No Python worker outlives its daemon: scans that fail, reject, stop early or end with their
session, for as long as asked.

Spark stops a Python worker daemon right after asking it for a worker when
the task that asked is interrupted (a failing task aborts its job and
interrupts the other tasks; a session's end or an interrupt cancels its
jobs), and the gateway stops the daemons of ended sessions and idle ones. A
worker forked in the instant its daemon stops ignores the daemon's SIGHUP
and used to stay, its parent init, blocked on a socket Spark never reads.
The test plays a user's mix of such scans through a gateway in front of the
test session's Spark, with the idle sweep of ``serve --local`` beside it,
for ``--worker-soak-seconds`` (``DEFAULT_SECONDS`` in the suite), after a
daemon killed outright in the middle of a read (which sends its workers
nothing at all), and counts the workers of this Spark whose daemon is gone:
none may be left.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader

import connect_plugin
from connect_plugin.spark_processes.python_daemons import IdleDaemons, daemons
from tests.integration.support import Upstream, embedded_jvm, new_session, serving
from tests.integration.worker_strays import fork_server, settled_strays, strays

OPTION = "--worker-soak-seconds"
DEFAULT_SECONDS = 60.0
CLIENTS = 2
FILES = 8
ROWS = 400
IDLE_S = 2.0
"""The sweep's idle time: short, so that it stops live sessions' daemons too."""
WAIT_S = 60.0


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``good/``: json files; ``mixed/``: the same with one bad record in the last file."""
    root = tmp_path_factory.mktemp("strays")
    for folder in ("good", "mixed"):
        (root / folder).mkdir()
        for n in range(FILES):
            lines = [json.dumps({"id": n * ROWS + i, "part": n}) for i in range(ROWS)]
            if folder == "mixed" and n == FILES - 1:
                lines[ROWS // 2] = '{"id": 1, "part": '
            (root / folder / f"{n}.json").write_text("\n".join(lines) + "\n")
    return root


def _slow_source() -> type[DataSource]:
    """A data source whose read takes its time (defined here: workers get it by value)."""

    class SlowReader(DataSourceReader):
        def read(self, partition: object) -> Iterator[tuple[int]]:
            time.sleep(WAIT_S)
            yield (1,)

    class Slow(DataSource):
        @classmethod
        def name(cls) -> str:
            return "slow_rows"

        def schema(self) -> str:
            return "id INT"

        def reader(self, schema: object) -> DataSourceReader:
            return SlowReader()

    return Slow


def _until(condition: Callable[[], bool], timeout_s: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def _reading_daemon(session: str, jvm: int) -> int | None:
    """The forked daemon that runs the session's read tasks, once it has a worker."""
    for daemon in daemons(under=jvm):
        cmdline = Path(f"/proc/{daemon.pid}/cmdline").read_bytes().split(b"\0")
        if daemon.session == session and daemon.workers and b"pyspark.worker" in cmdline:
            return daemon.forked
    return None


def _kill_a_daemon_mid_read(address: str, jvm: int, server: tuple[int, bytes]) -> None:
    """A daemon killed outright while its worker reads: the worker goes with it."""
    spark = new_session(address)
    outcome: dict[str, object] = {}
    try:
        source = _slow_source()
        spark.dataSource.register(source)

        def read() -> None:
            try:
                outcome["rows"] = spark.read.format(source.name()).load().count()
            except Exception as exc:
                outcome["error"] = exc

        reading = threading.Thread(target=read, daemon=True)
        reading.start()
        session = spark.client._server_session_id
        assert _until(lambda: _reading_daemon(session, jvm) is not None), "no worker reads"
        forked = _reading_daemon(session, jvm)
        assert forked is not None
        os.kill(forked, signal.SIGKILL)
        assert settled_strays(server) == [], "a killed daemon's worker outlived it"
        reading.join(WAIT_S)
        assert "error" in outcome, outcome
    finally:
        spark.stop()


class Mix:
    """One client's sessions: each runs a few scans of the mix, then ends."""

    def __init__(self, address: str, data: Path, seed: int) -> None:
        self.address = address
        self.data = data
        self.random = random.Random(seed)
        self.steps: Counter[str] = Counter()

    def run(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            spark = new_session(self.address)
            try:
                for _ in range(self.random.randint(1, 4)):
                    self.step(spark)
            finally:
                spark.stop()
            self.steps["sessions"] += 1

    def step(self, spark: SparkSession) -> None:
        kind = self.random.choice(
            ["fail", "fail-count", "reject", "limit", "interrupt", "end-mid-scan"]
        )
        self.steps[kind] += 1
        mixed, good = str(self.data / "mixed"), str(self.data / "good")
        try:
            if kind == "fail":
                connect_plugin.scan(spark, mixed, format="json").collect()
            elif kind == "fail-count":
                connect_plugin.scan(spark, mixed, format="json").count()
            elif kind == "reject":
                scan = connect_plugin.scan(spark, mixed, format="json", on_error="reject")
                assert scan.count() == FILES * ROWS - 1
            elif kind == "limit":
                assert len(connect_plugin.scan(spark, good, format="json").limit(3).collect()) == 3
            else:
                stop = spark.interruptAll if kind == "interrupt" else spark.stop
                timer = threading.Timer(self.random.uniform(0.05, 1.5), _quietly(stop))
                timer.start()
                try:
                    scan = connect_plugin.scan(spark, good, format="json")
                    scan.groupBy("part").count().collect()
                finally:
                    timer.cancel()
                    timer.join()
        except Exception as exc:  # a failing scan is the point; count what it was
            self.steps[f"{kind}: {type(exc).__name__}"] += 1
        if spark.is_stopped:
            raise _Ended


def _quietly(call: Callable[[], object]) -> Callable[[], None]:
    """``call``, whatever it raises (an interrupt that comes after the scan ended)."""

    def run() -> None:
        with contextlib.suppress(Exception):
            call()

    return run


class _Ended(Exception):
    """The session was ended in the middle of a scan."""


def _client(mix: Mix, deadline: float, errors: list[BaseException]) -> None:
    while time.monotonic() < deadline:
        try:
            mix.run(deadline)
        except _Ended:
            mix.steps["sessions"] += 1
        except BaseException as exc:
            errors.append(exc)
            return


def test_no_python_worker_outlives_its_daemon(
    upstream: Upstream, data: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if not upstream.embedded:
        pytest.skip("the Spark Connect server runs elsewhere: its Python workers are not here")
    server = fork_server()
    if server is None:
        pytest.skip("the test session's Spark starts its Python workers without a fork server")
    seconds = request.config.getoption(OPTION, None) or DEFAULT_SECONDS
    jvm = embedded_jvm(upstream)
    stop = threading.Event()
    sweeps = threading.Thread(target=IdleDaemons(IDLE_S, under=jvm).run, args=(lambda: True, stop))
    began = time.monotonic()
    with serving(upstream, tmp_path / "ws") as gateway:
        sweeps.start()
        try:
            _kill_a_daemon_mid_read(gateway.address, jvm, server)
            mixes = [Mix(gateway.address, data, seed) for seed in range(CLIENTS)]
            errors: list[BaseException] = []
            deadline = time.monotonic() + seconds
            clients = [
                threading.Thread(target=_client, args=(mix, deadline, errors)) for mix in mixes
            ]
            for client in clients:
                client.start()
            for client in clients:
                client.join()
            left = settled_strays(server)
        finally:
            stop.set()
            sweeps.join()
            _kill(strays(server))
    steps = sum((mix.steps for mix in mixes), Counter[Any]())
    print(f"{time.monotonic() - began:.0f} s, {CLIENTS} clients: {dict(sorted(steps.items()))}")
    assert errors == []
    assert left == [], f"{len(left)} Python workers outlived their daemon: {left}"


def _kill(pids: list[int]) -> None:
    """What a failing run left behind goes with it."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
