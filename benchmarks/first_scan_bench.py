"""A session's first scan: new sessions on a warm gateway, four at once, a fresh start, memory.

Spark starts three or four Python worker daemons per session, so a new
session's first scan pays for their start (importing pyspark among it). In
one run, on ``FILES`` json files of ``ROWS_PER_FILE`` rows:

- **new session, warm gateway**: ``SESSIONS`` sessions one after another,
  each opened, scanning once (``count``) and released; the median from
  opening to the count. Beside it, on the same server, the first read of a
  trivial Python data source (ten lines, no files) in a new session: the
  floor Spark itself sets. The same on a second embedded server whose
  worker daemons start as new interpreters (``--no-worker-forks``), and the
  scan on a third whose workers run the plain interpreter, with Spark's
  ``pyspark.zip`` first on their path (what the launcher
  ``connect-plugin-python`` avoids).
- **four at once**: ``CONCURRENT`` clients open sessions and scan at the
  same moment, ``ROUNDS`` times; the median of every client's time; and
  the same with the trivial source, Spark's own floor for that load.
- **fresh start**: ``connect-plugin serve --local`` launched anew (a new
  state folder), from launch to a client's first count; with the warm-up
  (the default) and with ``--no-warm-up``, with the JVM's class archive
  (written by a first start in the run's own cache folder, whose first
  count and stop are shown too), with ``--no-class-archive`` and with
  ``--no-worker-forks``; and the time to the ready line.
- **memory**: the machine's used memory and the Python worker daemons
  before and after ``MEMORY_SESSIONS`` scanning sessions opened and
  released.

Targets (issue 24): first scan ≤ 1.0 s and ≤ 1.5x the trivial source;
four at once ≤ 2.0 s; fresh start ≤ 8 s; memory within 10 %.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader

import connect_plugin
from connect_plugin.config import Config
from connect_plugin.server.stack import Stack
from connect_plugin.spark_processes.python_daemons import daemons

FILES = 4
ROWS_PER_FILE = 1_000
SESSIONS = 10
CONCURRENT = 4
ROUNDS = 3
MEMORY_SESSIONS = 30
READY_PREFIX = "connect-plugin gateway ready at "
START_TIMEOUT_S = 180.0


def _trivial_source() -> type[DataSource]:
    """The smallest Python data source: one row, no files (defined here, so that Spark's
    workers get it by value rather than importing this module)."""

    class TrivialReader(DataSourceReader):
        def read(self, partition: object) -> Iterator[tuple[int]]:
            yield (1,)

    class TrivialSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "first_scan_bench_trivial"

        def schema(self) -> str:
            return "id INT"

        def reader(self, schema: object) -> DataSourceReader:
            return TrivialReader()

    return TrivialSource


def _write(root: Path) -> Path:
    folder = root / "data"
    folder.mkdir()
    for index in range(FILES):
        lines = (json.dumps({"id": i, "part": index}) for i in range(ROWS_PER_FILE))
        (folder / f"{index}.json").write_text("\n".join(lines) + "\n")
    return folder


def _timed(address: str, work: Callable[[SparkSession], int], expected: int) -> float:
    """Open a session, run ``work`` once, release it; seconds from opening to the result."""
    started = time.perf_counter()
    spark = SparkSession.builder.remote(address).create()
    try:
        got = work(spark)
        seconds = time.perf_counter() - started
    finally:
        spark.stop()
    if got != expected:
        raise AssertionError(f"counted {got}, expected {expected}")
    return seconds


def _scan(data: Path) -> Callable[[SparkSession], int]:
    def run(spark: SparkSession) -> int:
        return connect_plugin.scan(spark, str(data), format="json").count()

    return run


def _trivial(spark: SparkSession) -> int:
    source = _trivial_source()
    spark.dataSource.register(source)
    return spark.read.format(source.name()).load().count()


def _used_memory() -> int:
    fields = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, value = line.split(":", 1)
        fields[name] = int(value.split()[0]) * 1024
    return fields["MemTotal"] - fields["MemAvailable"]


@contextmanager
def _stack(root: Path, name: str, *, forks: bool = True, plain: bool = False) -> Iterator[str]:
    """A gateway on an embedded server; ``forks``: its worker daemons come from the fork
    server; ``plain``: its workers run the interpreter itself, with Spark's ``pyspark.zip``
    first on their path (through a wrapper with no launcher beside it)."""
    python = None
    if plain:
        folder = root / f"{name}-python"
        folder.mkdir()
        python = folder / "python"
        python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
        python.chmod(0o755)
    config = Config(
        port=0,
        local=True,
        workspace=root / f"{name}-ws",
        state_dir=root / name,
        conf_dir=None,
        class_archive=False,
        worker_forks=forks,
    )
    with Stack(config, extra_spark_conf={"spark.ui.enabled": "false"}, worker_python=python) as stack:
        assert stack.gateway is not None
        yield stack.gateway.address


def _fresh_start(
    root: Path, data: Path, name: str, *flags: str
) -> tuple[float, float, float]:
    """``serve --local`` launched anew, with the class archive of the run's own cache folder
    (``root/cache``): seconds to its ready line, to a first count, and to stop."""
    command = [sys.executable, "-m", "connect_plugin.cli", "serve", "--local", "--port", "0"]
    command += ["--workspace", str(root / f"{name}-ws"), "--state-dir", str(root / name), *flags]
    env = {**os.environ, "XDG_CACHE_HOME": str(root / "cache")}
    started = time.perf_counter()
    with (root / f"{name}.log").open("w") as log:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True, env=env
        )
    first = ready = 0.0
    try:
        assert process.stdout is not None
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(START_TIMEOUT_S):
            raise RuntimeError(f"serve --local did not start; see {root / f'{name}.log'}")
        line = process.stdout.readline().strip()
        if not line.startswith(READY_PREFIX):
            raise RuntimeError(f"unexpected first line {line!r}")
        ready = time.perf_counter() - started
        address = line.removeprefix(READY_PREFIX)
        spark = SparkSession.builder.remote(address).create()
        try:
            assert _scan(data)(spark) == FILES * ROWS_PER_FILE
            first = time.perf_counter() - started
        finally:
            spark.stop()
    finally:
        stopping = time.perf_counter()
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return ready, first, time.perf_counter() - stopping


def _median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> dict[str, float]:
    figures: dict[str, float] = {}
    rows = FILES * ROWS_PER_FILE
    with tempfile.TemporaryDirectory(prefix="first-scan-bench-") as folder:
        root = Path(folder)
        data = _write(root)

        print("fresh serve --local, from launch to a first count ...", flush=True)
        _, writing_first, writing_stop = _fresh_start(root, data, "fresh-writing")
        ready, first, _ = _fresh_start(root, data, "fresh-warm")
        cold_ready, cold_first, _ = _fresh_start(root, data, "fresh-cold", "--no-warm-up")
        bare_ready, bare_first, _ = _fresh_start(
            root, data, "fresh-bare", "--no-class-archive"
        )
        unforked_ready, unforked_first, _ = _fresh_start(
            root, data, "fresh-unforked", "--no-worker-forks"
        )
        figures |= {
            "fresh_writing_archive_first_scan_s": writing_first,
            "fresh_writing_archive_stop_s": writing_stop,
            "fresh_ready_s": ready,
            "fresh_first_scan_s": first,
            "fresh_no_warm_up_ready_s": cold_ready,
            "fresh_no_warm_up_first_scan_s": cold_first,
            "fresh_no_archive_ready_s": bare_ready,
            "fresh_no_archive_first_scan_s": bare_first,
            "fresh_no_fork_server_ready_s": unforked_ready,
            "fresh_no_fork_server_first_scan_s": unforked_first,
        }

        print(f"plain interpreter: {SESSIONS} new sessions, one scan each ...", flush=True)
        with _stack(root, "plain", forks=False, plain=True) as address:
            plain = [_timed(address, _scan(data), rows) for _ in range(SESSIONS)]
        figures["plain_python_first_scan_s"] = _median(plain)

        print(f"launcher without the fork server: {SESSIONS} new sessions ...", flush=True)
        with _stack(root, "unforked", forks=False) as address:
            unforked = [_timed(address, _scan(data), rows) for _ in range(SESSIONS)]
            unforked_trivial = [_timed(address, _trivial, 1) for _ in range(SESSIONS)]
        figures["no_fork_server_first_scan_s"] = _median(unforked)
        figures["no_fork_server_trivial_first_read_s"] = _median(unforked_trivial)

        with _stack(root, "ours") as address:
            print(f"warm gateway: {SESSIONS} new sessions, one scan each ...", flush=True)
            scans: list[float] = []
            trivial: list[float] = []
            for _ in range(SESSIONS):
                scans.append(_timed(address, _scan(data), rows))
                trivial.append(_timed(address, _trivial, 1))
            figures["first_scan_s"] = _median(scans)
            figures["trivial_source_first_read_s"] = _median(trivial)

            print(f"{CONCURRENT} clients at once, {ROUNDS} rounds ...", flush=True)
            together: list[float] = []
            trivial_together: list[float] = []
            with ThreadPoolExecutor(CONCURRENT) as pool:
                for _ in range(ROUNDS):
                    runs = [pool.submit(_timed, address, _scan(data), rows) for _ in range(CONCURRENT)]
                    together += [run.result() for run in runs]
                    runs = [pool.submit(_timed, address, _trivial, 1) for _ in range(CONCURRENT)]
                    trivial_together += [run.result() for run in runs]
            figures["concurrent_first_scan_s"] = _median(together)
            figures["concurrent_trivial_first_read_s"] = _median(trivial_together)

            print(f"memory: {MEMORY_SESSIONS} scanning sessions opened and released ...", flush=True)
            time.sleep(2.0)
            daemons_before, memory_before = len(daemons()), _used_memory()
            for _ in range(MEMORY_SESSIONS):
                _timed(address, _scan(data), rows)
            time.sleep(2.0)
            daemons_after, memory_after = len(daemons()), _used_memory()
        figures |= {
            "daemons_before": daemons_before,
            "daemons_after": daemons_after,
            "memory_before_mb": memory_before / 2**20,
            "memory_after_mb": memory_after / 2**20,
        }

    ratio = figures["first_scan_s"] / figures["trivial_source_first_read_s"]
    growth = memory_after / memory_before - 1
    lines = [
        ("first scan, new session, warm gateway (median)", figures["first_scan_s"], "<= 1.0 s"),
        ("  trivial Python data source, first read", figures["trivial_source_first_read_s"], ""),
        ("  ratio scan / trivial", ratio, "<= 1.5"),
        ("  without the fork server (--no-worker-forks)", figures["no_fork_server_first_scan_s"], ""),
        ("  trivial source without the fork server", figures["no_fork_server_trivial_first_read_s"], ""),
        ("  plain interpreter (pyspark.zip), no launcher", figures["plain_python_first_scan_s"], ""),
        (f"first scan, {CONCURRENT} clients at once (median)", figures["concurrent_first_scan_s"], "<= 2.0 s"),
        ("  trivial source, the same", figures["concurrent_trivial_first_read_s"], ""),
        ("fresh serve --local: ready line", ready, ""),
        ("fresh serve --local: first count from launch", first, "<= 8 s"),
        ("  --no-warm-up: ready line", cold_ready, ""),
        ("  --no-warm-up: first count from launch", cold_first, ""),
        ("  --no-class-archive: ready line", bare_ready, ""),
        ("  --no-class-archive: first count from launch", bare_first, ""),
        ("  --no-worker-forks: ready line", unforked_ready, ""),
        ("  --no-worker-forks: first count from launch", unforked_first, ""),
        ("  first start, writing the archive: first count", writing_first, ""),
        ("  first start, writing the archive: stop", writing_stop, ""),
        (f"Python worker daemons before / after {MEMORY_SESSIONS} sessions", daemons_before, f"{daemons_after}"),
        ("used memory growth", growth * 100, "% (<= 10)"),
    ]
    for label, value, target in lines:
        print(f"{label:<58} {value:>8.2f}  {target}")
    figures["memory_growth_pct"] = growth * 100
    return figures


if __name__ == "__main__":
    main()
