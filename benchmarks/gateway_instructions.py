"""What the gateway's own code costs, counted: instructions per tiny query and per statement.

The CPU times of ``gateway`` move by 10-30 % between runs on a shared
machine, which hides a change of a few per cent. Here each process runs
under valgrind's callgrind, which counts the instructions it executes
(``Ir``) whatever else the machine does: the byte forwarder (``byte_forwarder``,
the reference), the forwarder answering releases (the floor) and the gateway,
each in front of the same embedded Spark Connect server. After a warm-up, the
counters are zeroed (``callgrind_control -z``), the client runs ``QUERIES``
tiny queries (``spark.range(1).collect()``) and the counters are dumped; the
same for ``STATEMENTS`` UPDATE, DELETE and MERGE of a ``SMALL_ROWS``-row temp
table through the gateway. An idle spell of ``IDLE_S`` seconds is counted too:
what the process does between calls, which a slower machine stretches.

Printed: instructions per tiny query of each process and the ratios
gateway / forwarder and gateway / floor; the gateway's instructions per
statement; its idle instructions per second. ``python -m
benchmarks.gateway_instructions --before OTHER/.venv/bin/python`` also counts
the gateway of another install (another checkout's venv) in the same run,
against the same Spark, and prints this gateway's counts over that one's.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql.connect.session import SparkSession

from benchmarks.gateway_bench import _forwarder_command, _gateway_command, _small, _stop
from connect_plugin.server.embedded import EmbeddedSparkConnect, free_port

QUERIES = 100
STATEMENTS = 30
WARM_UP = 20
SMALL_ROWS = 10
IDLE_S = 10.0
READY_TIMEOUT_S = 600.0
PROCESSES = ("forwarder", "floor", "gateway")
ROW_CHANGES = {
    "update": "UPDATE t SET v = v + 1 WHERE id % 2 = 0",
    "delete": "DELETE FROM t WHERE id = -1",
    "merge": (
        "MERGE INTO t USING (SELECT id, -id AS v FROM range(2)) AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    ),
}
_TOTAL = re.compile(r"^summary: (\d+)", re.MULTILINE)


class Counted:
    """A Python process under callgrind, its counters zeroed and dumped on demand."""

    def __init__(self, command: list[str], port: int, folder: Path, name: str) -> None:
        self._folder = folder
        self._name = "".join(c if c.isalnum() else "-" for c in name)
        self.address = f"sc://127.0.0.1:{port}"
        self._dumps = 0
        self.process = subprocess.Popen(
            cwd=folder if name.startswith("gateway") else None,
            args=[
                "valgrind",
                "--tool=callgrind",
                "--quiet",
                f"--callgrind-out-file={folder / self._name}.%p",
                *command,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline().strip()
        assert ready.endswith(f":{port}"), f"{name} did not start under valgrind: {ready!r}"

    def _control(self, *args: str) -> None:
        subprocess.run(
            ["callgrind_control", *args, str(self.process.pid)],
            check=True,
            capture_output=True,
            timeout=READY_TIMEOUT_S,
        )

    def counted(self, work: Callable[[], object]) -> int:
        """The instructions this process executes while ``work`` runs."""
        self._control("-z")
        work()
        self._control("-d")
        self._dumps += 1
        dump = self._folder / f"{self._name}.{self.process.pid}.{self._dumps}"
        match = _TOTAL.search(dump.read_text())
        assert match is not None, f"no total in {dump}"
        return int(match.group(1))

    def stop(self) -> None:
        _stop(self.process)


def _start(name: str, upstream: str, folder: Path, python: str) -> Counted:
    port = free_port()
    if name.startswith("gateway"):
        command = _gateway_command(upstream, port, folder / "ws" / str(port), python=python)
    else:
        extra = ["--answer-releases"] if name == "floor" else []
        command = _forwarder_command(upstream, port, *extra, python=python)
    return Counted(command, port, folder, name)


def _tiny(spark: SparkSession, times: int) -> None:
    for _ in range(times):
        _small(spark)


def main(before: str | None = None) -> None:
    """``before``: the Python of another install of connect-plugin (its venv's), whose
    gateway is counted in the same run as ``gateway (before)``."""
    missing = [tool for tool in ("valgrind", "callgrind_control") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"gateway_instructions needs {' and '.join(missing)}: apt install valgrind")
    pythons = {"forwarder": sys.executable, "floor": sys.executable, "gateway": sys.executable}
    if before is not None:
        pythons["gateway (before)"] = before
    per_query: dict[str, float] = {}
    per_statement: dict[str, dict[str, float]] = {}
    idle: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        upstream = EmbeddedSparkConnect(conf_dir=None, log_path=folder / "spark.log")
        upstream.start()
        try:
            for name, python in pythons.items():
                counted = _start(name, upstream.address, folder, python)
                try:
                    spark = SparkSession.builder.remote(counted.address).create()
                    try:
                        _tiny(spark, WARM_UP)
                        total = counted.counted(lambda s=spark: _tiny(s, QUERIES))
                        per_query[name] = total / QUERIES
                        if name.startswith("gateway"):
                            idle[name] = counted.counted(lambda: time.sleep(IDLE_S)) / IDLE_S
                            per_statement[name] = _row_changes(spark, counted)
                    finally:
                        spark.stop()
                finally:
                    counted.stop()
        finally:
            upstream.stop()

    print(f"instructions per tiny query (spark.range(1).collect(), {QUERIES} counted):")
    for name, count in per_query.items():
        print(f"  {name:16s} {count / 1e6:8.2f} M")
    print(
        f"  gateway / forwarder {per_query['gateway'] / per_query['forwarder']:.3f}, "
        f"gateway / floor {per_query['gateway'] / per_query['floor']:.3f}"
    )
    for name, statements in per_statement.items():
        print(f"{name}: instructions per statement on a {SMALL_ROWS}-row temp table")
        for statement, count in statements.items():
            print(f"  {statement:7s} {count / 1e6:8.2f} M")
        print(f"  idle: {idle[name] / 1e6:.2f} M instructions per second")
    if before is not None:
        print("gateway / gateway (before):")
        print(f"  tiny query {per_query['gateway'] / per_query['gateway (before)']:.3f}")
        for statement, count in per_statement["gateway"].items():
            ratio = count / per_statement["gateway (before)"][statement]
            print(f"  {statement:10s} {ratio:.3f}")


def _row_changes(spark: SparkSession, counted: Counted) -> dict[str, float]:
    spark.sql(
        f"CREATE TEMPORARY TABLE t AS SELECT id, id % 3 AS v FROM range({SMALL_ROWS})"
    ).collect()
    for statement in ROW_CHANGES.values():
        spark.sql(statement).collect()
    return {
        name: counted.counted(
            lambda s=statement: [spark.sql(s).collect() for _ in range(STATEMENTS)]
        )
        / STATEMENTS
        for name, statement in ROW_CHANGES.items()
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--before",
        metavar="PYTHON",
        help="the python of another install (a venv's bin/python) whose gateway is counted too",
    )
    main(parser.parse_args().before)
