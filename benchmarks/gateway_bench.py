"""What the gateway costs: a large toArrow() and a tiny query, direct vs through it.

Both paths talk to the same embedded Spark Connect server in the same run,
interleaved so that JIT warm-up, caches and machine noise hit both alike. The
gateway runs as its own process (``connect-plugin serve --upstream``), as it
is deployed, so it does not share the client's interpreter lock.
Targets (DESIGN.md): throughput ratio >= 0.95, added p50 latency <= 1 ms.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql.connect.session import SparkSession

from connect_plugin.server.embedded import EmbeddedSparkConnect, free_port

LARGE_ROWS = 3_000_000
LARGE_RUNS = 15
SMALL_RUNS = 300
THROUGHPUT_TARGET = 0.95
ADDED_P50_TARGET_MS = 1.0


def _large(spark: SparkSession) -> tuple[float, int]:
    started = time.perf_counter()
    table = (
        spark.range(LARGE_ROWS)
        .selectExpr("id", "id * 2 AS b", "CAST(id AS DOUBLE) / 3 AS c", "repeat('x', 16) AS s")
        .toArrow()
    )
    return time.perf_counter() - started, table.nbytes


def _small(spark: SparkSession) -> float:
    started = time.perf_counter()
    spark.range(1).collect()
    return time.perf_counter() - started


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        upstream = EmbeddedSparkConnect(conf_dir=None, log_path=Path(tmp) / "spark.log")
        upstream.start()
        port = free_port()
        gateway_process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "connect_plugin.cli",
                "serve",
                "--upstream",
                upstream.address,
                "--port",
                str(port),
                "--workspace",
                str(Path(tmp) / "ws"),
                "--log-level",
                "WARNING",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert gateway_process.stdout is not None
            ready = gateway_process.stdout.readline().strip()
            assert ready.endswith(f":{port}"), ready
            direct = SparkSession.builder.remote(upstream.address).create()
            gateway = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").create()
            try:
                for spark in (direct, gateway):
                    _large(spark)
                    for _ in range(20):
                        _small(spark)
                times: dict[str, list[float]] = {"direct": [], "gateway": []}
                size = 0
                for _ in range(LARGE_RUNS):
                    for name, spark in (("direct", direct), ("gateway", gateway)):
                        seconds, size = _large(spark)
                        times[name].append(seconds)
                latency: dict[str, list[float]] = {"direct": [], "gateway": []}
                for _ in range(SMALL_RUNS):
                    for name, spark in (("direct", direct), ("gateway", gateway)):
                        latency[name].append(_small(spark))
            finally:
                direct.stop()
                gateway.stop()
        finally:
            gateway_process.terminate()
            gateway_process.wait()
            if gateway_process.stdout is not None:
                gateway_process.stdout.close()
            upstream.stop()

    mb = size / 1e6
    d, g = statistics.median(times["direct"]), statistics.median(times["gateway"])
    ratio = d / g
    print(f"toArrow() of {mb:.0f} MB ({LARGE_ROWS:,} rows), median of {LARGE_RUNS}:")
    print(f"  direct  {d:.3f} s  ({mb / d:.0f} MB/s)")
    print(f"  gateway {g:.3f} s  ({mb / g:.0f} MB/s)")
    verdict = "met" if ratio >= THROUGHPUT_TARGET else "MISSED"
    print(
        f"  throughput ratio gateway/direct = {ratio:.3f}  (target >= {THROUGHPUT_TARGET}: {verdict})"
    )
    print(f"spark.range(1).collect(), {SMALL_RUNS} runs each:")
    for name in ("direct", "gateway"):
        values = latency[name]
        print(
            f"  {name:7s} p50 {_percentile(values, 0.5) * 1e3:.2f} ms"
            f"  p99 {_percentile(values, 0.99) * 1e3:.2f} ms"
        )
    added = (_percentile(latency["gateway"], 0.5) - _percentile(latency["direct"], 0.5)) * 1e3
    verdict = "met" if added <= ADDED_P50_TARGET_MS else "MISSED"
    print(f"  added p50 = {added:.2f} ms  (target <= {ADDED_P50_TARGET_MS} ms: {verdict})")


if __name__ == "__main__":
    main()
