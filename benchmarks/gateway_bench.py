"""What the gateway costs: a large toArrow() and a tiny query, direct vs through it.

Four paths: direct, the gateway, the gateway with Prometheus metrics on
(``--metrics-port``), and the gateway with tokens (``--auth-tokens``;
the client sends its ``authorization`` header in plaintext over loopback, so the
figure is the tokens' own cost, not TLS's), where every request is decoded and
re-encoded to make the token's user its user. All four talk to the same embedded Spark Connect server in the same run,
interleaved so that JIT warm-up, caches and machine noise hit them alike. Each
gateway runs as its own process (``connect-plugin serve --upstream``), as it
is deployed, so it does not share the client's interpreter lock.
Targets (DESIGN.md): throughput ratio >= 0.95, added p50 latency <= 1 ms;
metrics on: at most 3 % more gateway CPU per tiny query than metrics off
(each gateway process's own CPU time over the interleaved tiny queries).
"""

from __future__ import annotations

import secrets
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
TOKENS_COST_TARGET = 1.10
"""Tokens-on over tokens-off p50 of a tiny query: the rewrite should cost under ~10%."""
METRICS_CPU_TARGET = 1.03
PATHS = ("direct", "gateway", "metrics", "tokens")


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


def _start_gateway(
    upstream: str, workspace: Path, *extra: str
) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "connect_plugin.cli",
            "serve",
            "--upstream",
            upstream,
            "--port",
            str(port),
            "--workspace",
            str(workspace),
            "--log-level",
            "WARNING",
            *extra,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    ready = process.stdout.readline().strip()
    assert ready.endswith(f":{port}"), ready
    return process, port


def _cpu_s(pid: int) -> float:
    """CPU seconds the threads of a process have run, to the nanosecond (schedstat)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


def _stop_gateway(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait()
    if process.stdout is not None:
        process.stdout.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        upstream = EmbeddedSparkConnect(conf_dir=None, log_path=Path(tmp) / "spark.log")
        upstream.start()
        token = secrets.token_urlsafe(32)
        tokens_file = Path(tmp) / "tokens"
        tokens_file.write_text(f"bench {token}\n")
        tokens_file.chmod(0o600)
        gateways: list[subprocess.Popen[str]] = []
        try:
            plain, port = _start_gateway(upstream.address, Path(tmp) / "ws")
            gateways.append(plain)
            metered, metrics_port = _start_gateway(
                upstream.address, Path(tmp) / "ws-metrics", "--metrics-port", "0"
            )
            gateways.append(metered)
            guarded, tokens_port = _start_gateway(
                upstream.address, Path(tmp) / "ws-tokens", "--auth-tokens", str(tokens_file)
            )
            gateways.append(guarded)
            sessions = {
                "direct": SparkSession.builder.remote(upstream.address).create(),
                "gateway": SparkSession.builder.remote(f"sc://127.0.0.1:{port}").create(),
                "metrics": SparkSession.builder.remote(f"sc://127.0.0.1:{metrics_port}").create(),
                "tokens": SparkSession.builder.remote(
                    f"sc://127.0.0.1:{tokens_port}/;authorization=Bearer%20{token}"
                ).create(),
            }
            try:
                for spark in sessions.values():
                    _large(spark)
                    for _ in range(20):
                        _small(spark)
                times: dict[str, list[float]] = {name: [] for name in PATHS}
                size = 0
                for _ in range(LARGE_RUNS):
                    for name in PATHS:
                        seconds, size = _large(sessions[name])
                        times[name].append(seconds)
                latency: dict[str, list[float]] = {name: [] for name in PATHS}
                cpu_before = {"gateway": _cpu_s(plain.pid), "metrics": _cpu_s(metered.pid)}
                for _ in range(SMALL_RUNS):
                    for name in PATHS:
                        latency[name].append(_small(sessions[name]))
                cpu = {
                    "gateway": (_cpu_s(plain.pid) - cpu_before["gateway"]) / SMALL_RUNS,
                    "metrics": (_cpu_s(metered.pid) - cpu_before["metrics"]) / SMALL_RUNS,
                }
            finally:
                for spark in sessions.values():
                    spark.stop()
        finally:
            for process in gateways:
                _stop_gateway(process)
            upstream.stop()

    mb = size / 1e6
    d, g, _, t = (statistics.median(times[name]) for name in PATHS)
    ratio = d / g
    print(f"toArrow() of {mb:.0f} MB ({LARGE_ROWS:,} rows), median of {LARGE_RUNS}:")
    print(f"  direct  {d:.3f} s  ({mb / d:.0f} MB/s)")
    print(f"  gateway {g:.3f} s  ({mb / g:.0f} MB/s)")
    print(f"  tokens  {t:.3f} s  ({mb / t:.0f} MB/s)")
    verdict = "met" if ratio >= THROUGHPUT_TARGET else "MISSED"
    print(
        f"  throughput ratio gateway/direct = {ratio:.3f}  (target >= {THROUGHPUT_TARGET}: {verdict})"
    )
    print(f"  time ratio tokens/gateway = {t / g:.3f}")
    print(f"spark.range(1).collect(), {SMALL_RUNS} runs each:")
    for name in PATHS:
        values = latency[name]
        print(
            f"  {name:7s} p50 {_percentile(values, 0.5) * 1e3:.2f} ms"
            f"  p99 {_percentile(values, 0.99) * 1e3:.2f} ms"
        )
    added = (_percentile(latency["gateway"], 0.5) - _percentile(latency["direct"], 0.5)) * 1e3
    verdict = "met" if added <= ADDED_P50_TARGET_MS else "MISSED"
    print(f"  added p50 = {added:.2f} ms  (target <= {ADDED_P50_TARGET_MS} ms: {verdict})")
    metered_cpu = cpu["metrics"] / cpu["gateway"]
    verdict = "met" if metered_cpu <= METRICS_CPU_TARGET else "MISSED"
    print(
        f"  gateway CPU per query: metrics off {cpu['gateway'] * 1e3:.2f} ms, on "
        f"{cpu['metrics'] * 1e3:.2f} ms, ratio {metered_cpu:.3f} "
        f"(target <= {METRICS_CPU_TARGET}: {verdict})"
    )
    cost = _percentile(latency["tokens"], 0.5) / _percentile(latency["gateway"], 0.5)
    verdict = "met" if cost <= TOKENS_COST_TARGET else "MISSED"
    print(f"  p50 ratio tokens/gateway = {cost:.3f}  (target <= {TOKENS_COST_TARGET}: {verdict})")


if __name__ == "__main__":
    main()
