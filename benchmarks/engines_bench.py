"""Engines of share level ``user``: a cold start, a running engine, memory, eight users.

In one run:

- **cold first query**: a new user's first ``range(1).collect()`` through a
  gateway of share level ``user``, from the call (its engine starts on it)
  to the rows; with the warm-up scan (the default) and without. A first
  engine is started and stopped before, so the JVM's class archive exists.
- **second session of a running engine**: ``SESSIONS`` new sessions of a
  user whose engine runs, each opened and running ``QUERIES`` small
  queries; the median session against the same on a gateway of share
  level ``server`` in front of the embedded server (``--local``), same
  settings, same run. Target (issue 47): at most 5 % over.
- **idle engine memory**: the resident memory of an engine's processes
  (its JVM and whatever runs in its process group) after its first query,
  idle, at ``engine_driver_memory`` 1g.
- **eight users**: ``USERS`` users, each in a thread of its own running small
  queries for ``THROUGHPUT_S`` seconds, on their own engines against the
  same eight on one shared server: queries per second, and the ratio.
"""

from __future__ import annotations

import os
import secrets
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from connect_plugin.config import Config
from connect_plugin.server.gateway import Gateway
from connect_plugin.server.stack import Stack

USERS = 8
SESSIONS = 10
QUERIES = 5
THROUGHPUT_S = 30.0
COLD_USERS = 2
PAGE = os.sysconf("SC_PAGE_SIZE")


def _tokens(folder: Path, users: list[str]) -> tuple[Path, dict[str, str]]:
    folder.mkdir(parents=True, exist_ok=True)
    tokens = {user: f"{user}-{secrets.token_urlsafe(24)}" for user in users}
    path = folder / "tokens"
    path.write_text("".join(f"{user} {token}\n" for user, token in tokens.items()))
    path.chmod(0o600)
    return path, tokens


@contextmanager
def _stack(folder: Path, share_level: str, users: list[str], **settings: object) -> Iterator[
    tuple[Gateway, dict[str, str]]
]:
    tokens_file, tokens = _tokens(folder, users)
    config = Config(
        port=0,
        local=True,
        share_level=share_level,
        auth_tokens_file=tokens_file,
        workspace=folder / "workspace",
        state_dir=folder / "state",
        max_engines=0,
        engine_idle_timeout_s=0,
        **settings,  # type: ignore[arg-type]
    )
    with Stack(config) as stack:
        assert stack.gateway is not None
        yield stack.gateway, tokens


def _session(gateway: Gateway, token: str) -> SparkSession:
    return SparkSession.builder.remote(f"sc://localhost:{gateway.port}/;token={token}").create()


def _first_query_s(gateway: Gateway, token: str) -> float:
    started = time.perf_counter()
    spark = _session(gateway, token)
    try:
        spark.range(1).collect()
        return time.perf_counter() - started
    finally:
        spark.stop()


def _sessions_s(gateway: Gateway, token: str) -> float:
    """The median of ``SESSIONS`` sessions opened, queried ``QUERIES`` times and stopped."""
    times = []
    for _ in range(SESSIONS):
        started = time.perf_counter()
        spark = _session(gateway, token)
        try:
            for i in range(QUERIES):
                spark.range(100 + i).selectExpr("sum(id)").collect()
        finally:
            spark.stop()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _group_rss_mb(pid: int) -> float:
    """Resident memory of every process in ``pid``'s process group, in MB."""
    group = os.getpgid(pid)
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getpgid(int(entry.name)) != group:
                continue
            total += int((entry / "statm").read_text().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            continue
    return total / 2**20


def _throughput(gateway: Gateway, tokens: dict[str, str]) -> float:
    """Queries per second of ``USERS`` users querying at once for ``THROUGHPUT_S``."""
    sessions = [_session(gateway, token) for token in tokens.values()]
    try:
        for spark in sessions:
            spark.range(1).collect()
        stop = threading.Event()
        counts = [0] * len(sessions)

        def run(index: int) -> None:
            spark = sessions[index]
            while not stop.is_set():
                spark.range(1000).selectExpr("sum(id)").collect()
                counts[index] += 1

        with ThreadPoolExecutor(len(sessions)) as pool:
            futures = [pool.submit(run, i) for i in range(len(sessions))]
            time.sleep(THROUGHPUT_S)
            stop.set()
            for future in futures:
                future.result()
        return sum(counts) / THROUGHPUT_S
    finally:
        for spark in sessions:
            spark.stop()


def main() -> dict[str, float]:
    figures: dict[str, float] = {}
    users = [f"user{i}" for i in range(USERS)]
    with tempfile.TemporaryDirectory(prefix="engines-bench-") as name:
        folder = Path(name)
        for warm_up in (True, False):
            cold = folder / f"cold-{warm_up}"
            cold.mkdir()
            with _stack(cold, "user", ["prime", *users], warm_up=warm_up) as (gateway, tokens):
                _first_query_s(gateway, tokens["prime"])
                firsts = [_first_query_s(gateway, tokens[u]) for u in users[:COLD_USERS]]
                label = "with" if warm_up else "without"
                figures[f"cold_first_query_{label}_warm_up_s"] = statistics.median(firsts)
                print(
                    f"cold engine, first query {label} warm-up: "
                    + ", ".join(f"{s:.2f} s" for s in firsts),
                    flush=True,
                )
                if warm_up:
                    assert gateway.engines is not None
                    pid = gateway.engines.pids()[users[0]]
                    time.sleep(5.0)
                    figures["idle_engine_mb"] = _group_rss_mb(pid)
                    print(f"idle engine (1g driver): {figures['idle_engine_mb']:.0f} MB resident")
                    engines_s = _sessions_s(gateway, tokens[users[0]])
        with _stack(folder / "server", "server", users) as (gateway, tokens):
            server_s = _sessions_s(gateway, tokens[users[0]])
            shared_qps = _throughput(gateway, tokens)
        figures["session_engine_s"] = engines_s
        figures["session_server_s"] = server_s
        figures["session_ratio"] = engines_s / server_s
        print(
            f"a session of {QUERIES} queries: {engines_s * 1000:.0f} ms on a running engine, "
            f"{server_s * 1000:.0f} ms at share level server: {engines_s / server_s:.3f}x "
            "(target <= 1.05x)",
            flush=True,
        )
        with _stack(folder / "eight", "user", users, warm_up=False) as (gateway, tokens):
            own_qps = _throughput(gateway, tokens)
        figures["own_engines_qps"] = own_qps
        figures["shared_server_qps"] = shared_qps
        figures["throughput_ratio"] = own_qps / shared_qps
        print(
            f"{USERS} users querying at once: {own_qps:.1f} queries/s on their own engines, "
            f"{shared_qps:.1f} on one shared server: {own_qps / shared_qps:.2f}x",
            flush=True,
        )
    return figures


if __name__ == "__main__":
    main()
