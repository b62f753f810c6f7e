"""Where the gateway's CPU goes under 8 clients of tiny queries: a py-spy profile of it.

The gateway runs as its own process (``connect-plugin serve --upstream``) in
front of an embedded Spark Connect server; 8 clients (one session each, in
threads) run ``spark.range(1).collect()`` while py-spy samples the gateway's
threads that are on a CPU (idle ones are not sampled). Printed: the functions
the samples were in (own samples), and the gateway's own functions with
everything they called (total samples), each as a share of all samples.
py-spy sees Python frames only: the time grpc's Cython core and the event
loop's C code take counts for the Python frame that called them
(``Handle._run`` runs grpc's callbacks).
"""

from __future__ import annotations

import collections
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from pyspark.sql.connect.session import SparkSession

from benchmarks.gateway_bench import _start_gateway, _stop
from connect_plugin.server.embedded import EmbeddedSparkConnect

CLIENTS = 8
QUERIES = 150
"""Tiny queries each client runs while the gateway is sampled."""
RATE = 250
"""Samples a second."""
TOP = 25
LINE = re.compile(r":\d+\)$")
"""The line number of py-spy's ``function (file:line)``: samples are counted by function."""


def _queries(sessions: list[SparkSession]) -> None:
    def client(spark: SparkSession) -> None:
        for _ in range(QUERIES):
            spark.range(1).collect()

    threads = [threading.Thread(target=client, args=(spark,)) for spark in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _frames(raw: Path) -> list[tuple[list[str], int]]:
    """Each stack py-spy saw (outermost first) with its count of samples."""
    stacks = []
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks.append((stack.split(";"), int(count)))
    return stacks


def _print(stacks: list[tuple[list[str], int]]) -> None:
    total = sum(count for _, count in stacks) or 1
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    for lines, count in stacks:
        frames = [LINE.sub(")", line) for line in lines]
        own[frames[-1]] += count
        for frame in set(frames):
            if "connect_plugin/" in frame:
                inclusive[frame] += count
    print(f"{total} samples of the gateway's busy threads; own samples:")
    for frame, count in own.most_common(TOP):
        print(f"  {100 * count / total:5.1f} %  {frame}")
    print("the gateway's functions, with what they call:")
    for frame, count in inclusive.most_common(TOP):
        print(f"  {100 * count / total:5.1f} %  {frame}")


def main() -> None:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).is_file():
        raise SystemExit("the gateway's profile needs py-spy: pip install py-spy")
    with tempfile.TemporaryDirectory() as tmp:
        upstream = EmbeddedSparkConnect(conf_dir=None, log_path=Path(tmp) / "spark.log")
        upstream.start()
        gateway = None
        try:
            gateway, port = _start_gateway(upstream.address, Path(tmp) / "ws")
            sessions = [
                SparkSession.builder.remote(f"sc://127.0.0.1:{port}").create()
                for _ in range(CLIENTS)
            ]
            try:
                for spark in sessions:
                    for _ in range(10):
                        spark.range(1).collect()
                raw = Path(tmp) / "profile.txt"
                record = [spy, "record", "--pid", str(gateway.pid), "--rate", str(RATE)]
                with subprocess.Popen(
                    [*record, "--format", "raw", "--output", str(raw), "--nonblocking"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                ) as spying:
                    _queries(sessions)
                    spying.send_signal(signal.SIGINT)
                    spying.wait()
                stacks = _frames(raw)
            finally:
                for spark in sessions:
                    spark.stop()
        finally:
            if gateway is not None:
                _stop(gateway)
            upstream.stop()
    print(f"{CLIENTS} clients, {QUERIES} tiny queries each, sampled at {RATE}/s:")
    _print(stacks)


if __name__ == "__main__":
    main()
