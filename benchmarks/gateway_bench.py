"""What the gateway costs: a large toArrow() and a tiny query, direct vs through it.

Six paths: direct; a minimal grpc.aio forwarder of bytes (``byte_forwarder``,
what a Python gateway is measured against); that forwarder answering the
client's releases up to a response itself (``--answer-releases``: the least
any gateway that serves the client's calls and sends Spark three per small
query does, so the floor of the gateway's CPU and latency in grpc.aio); the
gateway; the gateway
with Prometheus metrics on (``--metrics-port``); and the gateway with tokens
(``--auth-tokens``; the client sends its ``authorization`` header in plaintext
over loopback, so the figure is the tokens' own cost, not TLS's), where every
request is decoded and re-encoded to make the token's user its user. All talk
to the same embedded Spark Connect server in the same run, interleaved so that
JIT warm-up, caches and machine noise hit them alike. The forwarder and each
gateway run as their own process (``connect-plugin serve --upstream``), as
deployed, so they do not share the client's interpreter lock.

Printed: the large result's time against direct; the tiny query's p50 and
p99 on each path, and what the gateway adds to direct's; each process's own
CPU time per tiny query (the gateway's and the floor's against the
forwarder's); the queries per second of 8 clients at once (each its own session, in threads)
against direct; and the calls the gateway sent on to Spark per tiny query,
by method (``connect_plugin_upstream_calls_total`` of the metered gateway).
Targets (DESIGN.md, issue 48): gateway CPU per tiny query <= 0.6x the
forwarder's; added p50 <= 1.5 ms, p99 <= 5 ms; 8 clients and the large
result >= 0.95x direct; <= 3 upstream calls per tiny query; metrics on: at
most 3 % more gateway CPU than off; tokens: p50 at most 10 % over the
gateway's.
"""

from __future__ import annotations

import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql.connect.session import SparkSession

from connect_plugin.server.embedded import EmbeddedSparkConnect, free_port

LARGE_ROWS = 3_000_000
LARGE_RUNS = 15
SMALL_RUNS = 300
CLIENTS = 8
CLIENT_QUERIES = 40
"""Tiny queries each of the clients runs in one measurement of their throughput."""
CLIENT_ROUNDS = 3
THROUGHPUT_TARGET = 0.95
ADDED_P50_TARGET_MS = 1.5
ADDED_P99_TARGET_MS = 5.0
CPU_TARGET = 0.6
"""Gateway CPU per tiny query over the forwarder's."""
UPSTREAM_CALLS_TARGET = 3.0
TOKENS_COST_TARGET = 1.10
"""Tokens-on over tokens-off p50 of a tiny query: the rewrite should cost under ~10%."""
METRICS_CPU_TARGET = 1.03
PATHS = ("direct", "forwarder", "floor", "gateway", "metrics", "tokens")
LARGE = tuple(name for name in PATHS if name != "floor")
"""The paths of the large result (the floor's releases are too few there to tell)."""
CROWDED = ("direct", "forwarder", "floor", "gateway")
"""The paths 8 clients are measured on."""


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


def _crowd(sessions: list[SparkSession]) -> float:
    """Tiny queries per second of ``sessions`` querying at once, one thread each."""
    start = threading.Barrier(len(sessions) + 1)

    def client(spark: SparkSession) -> None:
        start.wait()
        for _ in range(CLIENT_QUERIES):
            spark.range(1).collect()

    threads = [threading.Thread(target=client, args=(spark,)) for spark in sessions]
    for thread in threads:
        thread.start()
    start.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return len(sessions) * CLIENT_QUERIES / (time.perf_counter() - started)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _ready(command: list[str], port: int) -> subprocess.Popen[str]:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    ready = process.stdout.readline().strip()
    assert ready.endswith(f":{port}"), ready
    return process


def _gateway_command(
    upstream: str, port: int, workspace: Path, *extra: str, python: str = sys.executable
) -> list[str]:
    """The gateway of ``python``'s install, serving on ``port`` in front of ``upstream``."""
    return [
        python,
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
    ]


def _forwarder_command(
    upstream: str, port: int, *extra: str, python: str = sys.executable
) -> list[str]:
    """The byte forwarder, serving on ``port`` in front of ``upstream``."""
    target = upstream.removeprefix("sc://").split("/")[0]
    return [
        python, "-m", "benchmarks.byte_forwarder", "--upstream", target, *extra,
        "--port", str(port),
    ]  # fmt: skip


def _start_gateway(
    upstream: str, workspace: Path, *extra: str
) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    return _ready(_gateway_command(upstream, port, workspace, *extra), port), port


def _start_forwarder(upstream: str, *extra: str) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    return _ready(_forwarder_command(upstream, port, *extra), port), port


def _upstream_calls(metrics_port: int) -> Counter[str]:
    """``connect_plugin_upstream_calls_total`` of the gateway serving metrics there, by method."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics") as response:
        text = response.read().decode()
    calls: Counter[str] = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "connect_plugin_upstream_calls_total":
                calls[sample.labels["method"]] += int(sample.value)
    return calls


def _cpu_s(pid: int) -> float:
    """CPU seconds the threads of a process have run, to the nanosecond (schedstat)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait()
    if process.stdout is not None:
        process.stdout.close()


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        upstream = EmbeddedSparkConnect(conf_dir=None, log_path=Path(tmp) / "spark.log")
        upstream.start()
        token = secrets.token_urlsafe(32)
        tokens_file = Path(tmp) / "tokens"
        tokens_file.write_text(f"bench {token}\n")
        tokens_file.chmod(0o600)
        processes: list[subprocess.Popen[str]] = []
        try:
            forwarder, forwarder_port = _start_forwarder(upstream.address)
            processes.append(forwarder)
            floor, floor_port = _start_forwarder(upstream.address, "--answer-releases")
            processes.append(floor)
            plain, port = _start_gateway(upstream.address, Path(tmp) / "ws")
            processes.append(plain)
            metrics_port = free_port()
            metered, metered_port = _start_gateway(
                upstream.address, Path(tmp) / "ws-metrics", "--metrics-port", str(metrics_port)
            )
            processes.append(metered)
            guarded, tokens_port = _start_gateway(
                upstream.address, Path(tmp) / "ws-tokens", "--auth-tokens", str(tokens_file)
            )
            processes.append(guarded)
            addresses = {
                "direct": upstream.address,
                "forwarder": f"sc://127.0.0.1:{forwarder_port}",
                "floor": f"sc://127.0.0.1:{floor_port}",
                "gateway": f"sc://127.0.0.1:{port}",
                "metrics": f"sc://127.0.0.1:{metered_port}",
                "tokens": f"sc://127.0.0.1:{tokens_port}/;authorization=Bearer%20{token}",
            }
            sessions = {
                name: SparkSession.builder.remote(address).create()
                for name, address in addresses.items()
            }
            crowds = {
                name: [
                    SparkSession.builder.remote(addresses[name]).create() for _ in range(CLIENTS)
                ]
                for name in CROWDED
            }
            try:
                for name, spark in sessions.items():
                    if name in LARGE:
                        _large(spark)
                    for _ in range(20):
                        _small(spark)
                for crowd in crowds.values():
                    for spark in crowd:
                        _small(spark)
                times: dict[str, list[float]] = {name: [] for name in LARGE}
                size = 0
                for _ in range(LARGE_RUNS):
                    for name in LARGE:
                        seconds, size = _large(sessions[name])
                        times[name].append(seconds)
                latency: dict[str, list[float]] = {name: [] for name in PATHS}
                pids = {
                    "forwarder": forwarder.pid,
                    "floor": floor.pid,
                    "gateway": plain.pid,
                    "metrics": metered.pid,
                }
                cpu_before = {name: _cpu_s(pid) for name, pid in pids.items()}
                calls_before = _upstream_calls(metrics_port)
                for _ in range(SMALL_RUNS):
                    for name in PATHS:
                        latency[name].append(_small(sessions[name]))
                cpu = {
                    name: (_cpu_s(pid) - cpu_before[name]) / SMALL_RUNS
                    for name, pid in pids.items()
                }
                calls = _upstream_calls(metrics_port)
                calls.subtract(calls_before)
                rates: dict[str, list[float]] = {name: [] for name in CROWDED}
                for _ in range(CLIENT_ROUNDS):
                    for name in CROWDED:
                        rates[name].append(_crowd(crowds[name]))
            finally:
                for spark in [*sessions.values(), *(s for c in crowds.values() for s in c)]:
                    spark.stop()
        finally:
            for process in processes:
                _stop(process)
            upstream.stop()

    mb = size / 1e6
    median = {name: statistics.median(times[name]) for name in LARGE}
    d = median["direct"]
    print(f"toArrow() of {mb:.0f} MB ({LARGE_ROWS:,} rows), median of {LARGE_RUNS}:")
    for name in LARGE:
        print(f"  {name:9s} {median[name]:.3f} s  ({mb / median[name]:.0f} MB/s)")
    for name in ("forwarder", "gateway"):
        ratio = d / median[name]
        verdict = _verdict(ratio >= THROUGHPUT_TARGET)
        print(
            f"  throughput ratio {name}/direct = {ratio:.3f}"
            f"  (target >= {THROUGHPUT_TARGET}: {verdict})"
        )
    print(f"  time ratio tokens/gateway = {median['tokens'] / median['gateway']:.3f}")

    print(f"spark.range(1).collect(), {SMALL_RUNS} runs each:")
    for name in PATHS:
        values = latency[name]
        print(
            f"  {name:9s} p50 {_percentile(values, 0.5) * 1e3:.2f} ms"
            f"  p99 {_percentile(values, 0.99) * 1e3:.2f} ms"
        )
    for name in ("forwarder", "floor", "gateway"):
        added = {
            q: (_percentile(latency[name], q) - _percentile(latency["direct"], q)) * 1e3
            for q in (0.5, 0.99)
        }
        if name != "gateway":
            print(f"  added by the {name}: p50 {added[0.5]:.2f} ms, p99 {added[0.99]:.2f} ms")
            continue
        print(
            f"  added by the gateway: p50 {added[0.5]:.2f} ms (target <= {ADDED_P50_TARGET_MS} ms: "
            f"{_verdict(added[0.5] <= ADDED_P50_TARGET_MS)}), p99 {added[0.99]:.2f} ms "
            f"(target <= {ADDED_P99_TARGET_MS} ms: {_verdict(added[0.99] <= ADDED_P99_TARGET_MS)})"
        )
    ratio = cpu["gateway"] / cpu["forwarder"]
    print(
        f"  CPU per query: gateway {cpu['gateway'] * 1e3:.2f} ms, forwarder "
        f"{cpu['forwarder'] * 1e3:.2f} ms, ratio {ratio:.3f} "
        f"(target <= {CPU_TARGET}: {_verdict(ratio <= CPU_TARGET)})"
    )
    print(
        f"  CPU per query of the floor (releases answered) {cpu['floor'] * 1e3:.2f} ms: "
        f"forwarder {cpu['floor'] / cpu['forwarder']:.3f}, gateway/floor "
        f"{cpu['gateway'] / cpu['floor']:.3f}"
    )
    metered_cpu = cpu["metrics"] / cpu["gateway"]
    print(
        f"  gateway CPU per query with metrics on {cpu['metrics'] * 1e3:.2f} ms, ratio to off "
        f"{metered_cpu:.3f} (target <= {METRICS_CPU_TARGET}: "
        f"{_verdict(metered_cpu <= METRICS_CPU_TARGET)})"
    )
    cost = _percentile(latency["tokens"], 0.5) / _percentile(latency["gateway"], 0.5)
    verdict = _verdict(cost <= TOKENS_COST_TARGET)
    print(f"  p50 ratio tokens/gateway = {cost:.3f}  (target <= {TOKENS_COST_TARGET}: {verdict})")
    per_query = {method: count / SMALL_RUNS for method, count in calls.items() if count}
    total = sum(per_query.values())
    listed = ", ".join(f"{method} {n:.3f}" for method, n in sorted(per_query.items()))
    print(
        f"  upstream calls per query {total:.3f} ({listed}) "
        f"(target <= {UPSTREAM_CALLS_TARGET:.0f}: {_verdict(total <= UPSTREAM_CALLS_TARGET)})"
    )

    print(
        f"{CLIENTS} clients at once, {CLIENT_QUERIES} tiny queries each, median of {CLIENT_ROUNDS}:"
    )
    rate = {name: statistics.median(rates[name]) for name in CROWDED}
    for name in CROWDED:
        print(f"  {name:9s} {rate[name]:.0f} queries/s")
    for name in ("forwarder", "floor", "gateway"):
        ratio = rate[name] / rate["direct"]
        verdict = _verdict(ratio >= THROUGHPUT_TARGET)
        print(f"  ratio {name}/direct = {ratio:.3f}  (target >= {THROUGHPUT_TARGET}: {verdict})")


if __name__ == "__main__":
    main()
