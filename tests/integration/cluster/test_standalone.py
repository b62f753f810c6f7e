"""The compose file's cluster on separate hosts: master, two workers, connect, gateway, client.

Every role is the image's entrypoint in a network namespace of its own; the
workspace is one folder every host sees at the same path. The client, on its
own host, talks to the gateway only. Tests run in file order on one cluster:
the kills come last.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path

import pytest

from connect_plugin.server.sessions.workspace import PRIVATE_DIR, REGISTRY_FILE
from tests.integration.cluster.cluster import TIMINGS, Client, Cluster, wait_for
from tests.integration.cluster.netns import Network
from tests.integration.support import assert_private

CTTAS_ROWS = 2_000_000
CTTAS_PARTITIONS = 8
SCAN_FILES = 8
SCAN_ROWS_PER_FILE = 5_000
KILL_ROWS = 2_000_000
KILL_PARTITIONS = 16
KILL_TIMEOUT_S = 300.0


@pytest.fixture(scope="module")
def cluster(network: Network, tmp_path_factory: pytest.TempPathFactory) -> Cluster:
    standalone = Cluster.standalone(network, tmp_path_factory.mktemp("standalone"))
    return standalone.started("standalone (master, 2 workers, connect, gateway)")


def _table_folder(cluster: Cluster, session_id: str) -> Path:
    (folder,) = (cluster.workspace / session_id).iterdir()
    return folder


def _timed_sql(client: Client, session: str, query: str) -> tuple[float, list[list[object]]]:
    began = time.monotonic()
    rows = client.sql(session, query)
    return time.monotonic() - began, rows


def test_executors_reach_the_driver_over_the_bridge(cluster: Cluster) -> None:
    driver = f"spark://CoarseGrainedScheduler@{cluster.address('connect')}:"
    driver_log = cluster.log("connect").read_text()
    for worker in cluster.workers:
        executors = cluster.executor_text(worker)
        assert f"Connecting to driver: {driver}" in executors
        assert not re.search(r"Connecting to driver: \S*@(127\.|localhost)", executors)
        address = re.escape(cluster.address(worker))
        assert re.search(rf"Registered executor .*\({address}:\d+\)", driver_log), worker


def test_cttas_of_two_million_rows_runs_on_both_workers(cluster: Cluster, client: Client) -> None:
    session_id = client.open("cttas")
    before = {worker: cluster.finished_tasks(worker) for worker in cluster.workers}
    took, rows = _timed_sql(
        client,
        "cttas",
        "CREATE TEMPORARY TABLE big AS SELECT id, id % 100 AS k, CAST(id AS STRING) AS s "
        f"FROM range(0, {CTTAS_ROWS}, 1, {CTTAS_PARTITIONS})",
    )
    TIMINGS[f"CTTAS of {CTTAS_ROWS:,} rows on 2 workers"] = took
    assert rows == [["big", CTTAS_ROWS]]
    for worker in cluster.workers:
        assert cluster.finished_tasks(worker) - before[worker], f"no task ran on {worker}"
    assert client.sql("cttas", "SELECT count(*), count(DISTINCT id), sum(k) FROM big") == [
        [CTTAS_ROWS, CTTAS_ROWS, sum(range(100)) * (CTTAS_ROWS // 100)]
    ]
    table = _table_folder(cluster, session_id)
    assert assert_private(table) >= CTTAS_PARTITIONS
    client.stop("cttas")


def _scan_files(folder: Path) -> dict[str, int]:
    """json files, each with one record whose ``n`` is not a number; path -> its good rows."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for number in range(SCAN_FILES):
        path = folder / f"part-{number}.json"
        records = [
            {"id": number * SCAN_ROWS_PER_FILE + i, "n": i} for i in range(SCAN_ROWS_PER_FILE)
        ]
        records[SCAN_ROWS_PER_FILE // 2]["n"] = "not a number"
        path.write_text("".join(json.dumps(record) + "\n" for record in records))
        files[str(path)] = SCAN_ROWS_PER_FILE - 1
    return files


def test_scan_runs_in_the_python_workers_of_both_workers(cluster: Cluster, client: Client) -> None:
    files = _scan_files(cluster.root / "data")
    client.open("scan")
    began = time.monotonic()
    rows = client.scan(
        "scan",
        str(cluster.root / "data"),
        ["count(*)", "count(DISTINCT id)"],
        format="json",
        schema="id BIGINT, n BIGINT",
        on_error="skip",
    )
    TIMINGS[f"scan of {sum(files.values()):,} json rows in {SCAN_FILES} files"] = (
        time.monotonic() - began
    )
    assert rows == [[sum(files.values()), sum(files.values())]]
    # The reader logs each file's bad records once, from the Python process that read it:
    # the files are split between the two workers' executors and none was read by the driver.
    skipped = re.compile(r"file (\S+): 1 bad record\(s\) skipped")
    read_by = {worker: skipped.findall(cluster.executor_text(worker)) for worker in cluster.workers}
    for worker, read in read_by.items():
        assert read, f"the scan read nothing on {worker}"
    assert sorted(path for read in read_by.values() for path in read) == sorted(files)
    assert not skipped.search(cluster.log("connect").read_text())
    # Every Python daemon of the scan, on the workers' executors (whose environment has no
    # PYTHONHASHSEED) and on the driver, came from the fork server beside the role.
    for name in [*cluster.workers, "connect"]:
        forked = cluster.forked_daemons(name)
        assert forked is not None, f"no fork server beside {name}"
        assert forked >= 1, name
    assert cluster.forked_daemons("gateway") is None
    client.stop("scan")


def test_the_workers_and_the_driver_run_the_idle_python_worker_sweeper(cluster: Cluster) -> None:
    """Spark keeps a session's Python daemons on every executor and on the driver until it
    stops; the worker and connect roles run the sweeper (``stop-idle-python-workers``)
    beside Spark for as long as Spark runs, and stop only themselves when Spark stops."""
    for name in [*cluster.workers, "connect"]:
        role = str(cluster.processes[name].pid)
        assert cluster.sweepers(name) == [["--idle-s", "600", "--while-pid", role]], name
    assert cluster.sweepers("gateway") == []


def test_release_leaves_nothing_of_the_session(cluster: Cluster, client: Client) -> None:
    session_id = client.open("release")
    client.sql("release", "CREATE TEMPORARY TABLE a AS SELECT id FROM range(1000)")
    client.sql(
        "release",
        "CREATE TEMPORARY TABLE b USING csv PARTITIONED BY (k) AS "
        "SELECT id, CAST(id % 3 AS INT) AS k FROM range(300)",
    )
    assert len(list((cluster.workspace / session_id).iterdir())) == 2
    client.stop("release")
    assert not (cluster.workspace / session_id).exists()
    registry = cluster.workspace / PRIVATE_DIR / REGISTRY_FILE
    with sqlite3.connect(f"file:{registry}?mode=ro", uri=True, timeout=10) as db:
        for table in ("sessions", "temp_tables"):
            query = f"SELECT count(*) FROM {table} WHERE session_id = ?"
            assert db.execute(query, (session_id,)).fetchone() == (0,), table
    left = {path.name for path in cluster.workspace.iterdir()} - {PRIVATE_DIR}
    assert left <= set(client.sessions.values()), "folders of no open session are left"


def test_gateway_killed_and_restarted_keeps_live_sessions_tables(
    cluster: Cluster, client: Client
) -> None:
    client.open("kept")
    client.open("other")
    client.sql("kept", "CREATE TEMPORARY TABLE t AS SELECT id FROM range(100000)")
    client.sql("other", "CREATE TEMPORARY TABLE t USING json AS SELECT id, 'x' AS s FROM range(7)")

    cluster.kill("gateway")
    began = time.monotonic()
    cluster.start("gateway")
    TIMINGS["gateway restart after kill -9, to healthy"] = cluster.wait_healthy("gateway")
    assert client.sql("kept", "SELECT count(*), sum(id) FROM t") == [[100000, sum(range(100000))]]
    TIMINGS["gateway restart after kill -9, to the first query answered"] = time.monotonic() - began
    assert client.sql("other", "SELECT count(*) FROM t") == [[7]]
    assert [row[0] for row in client.sql("kept", "SHOW TEMPORARY TABLES")] == ["t"]
    client.sql("kept", "CREATE TEMPORARY TABLE u AS SELECT 1 AS one")
    assert client.sql("kept", "SELECT * FROM u") == [[1]]


def test_worker_killed_mid_cttas_spark_retries_and_the_table_is_complete(
    cluster: Cluster, client: Client
) -> None:
    victim, survivor = cluster.workers
    session_id = client.open("kill")
    seen = cluster.finished_tasks(victim) | cluster.running_tasks(victim)
    first_new = max(seen, default=-1) + 1
    registered = cluster.registered_executors(victim)
    began = time.monotonic()
    client.send(
        op="sql",
        session="kill",
        query="CREATE TEMPORARY TABLE k AS SELECT id, sha2(CAST(id AS STRING), 256) AS h "
        f"FROM range(0, {KILL_ROWS}, 1, {KILL_PARTITIONS})",
    )
    wait_for(
        lambda: any(tid >= first_new for tid in cluster.running_tasks(victim)),
        KILL_TIMEOUT_S,
        f"a task of the CTTAS running on {victim}",
        poll=0.02,
    )
    interrupted = {tid for tid in cluster.running_tasks(victim) if tid >= first_new}
    cluster.kill(victim)
    answer = client.receive(KILL_TIMEOUT_S)
    TIMINGS[f"CTTAS of {KILL_ROWS:,} rows with a worker killed -9 mid-write"] = (
        time.monotonic() - began
    )
    assert answer == {"rows": [["k", KILL_ROWS]]}
    assert client.sql("kill", "SELECT count(*), count(DISTINCT id) FROM k") == [
        [KILL_ROWS, KILL_ROWS]
    ]
    # The driver's word that the task died with its executor and was run again elsewhere.
    retried = re.compile(r"\(TID (\d+)\) failed because .* its executor exited")
    lost = {int(tid) for tid in retried.findall(cluster.log("connect").read_text())}
    assert interrupted & lost, f"Spark did not report tasks {interrupted} lost with {victim}"
    table = _table_folder(cluster, session_id)
    assert not list(table.rglob("_temporary")), "a killed task's attempt files were left"
    assert_private(table)

    restarted = time.monotonic()
    cluster.start(victim)
    cluster.wait_healthy(victim)
    cluster.wait_registered(victim, more_than=registered)
    TIMINGS["worker restart after kill -9, to its new executor registered"] = (
        time.monotonic() - restarted
    )
    before = cluster.finished_tasks(victim) | cluster.finished_tasks(survivor)
    client.sql(
        "kill",
        f"CREATE TEMPORARY TABLE again AS SELECT id FROM range(0, 100, 1, {KILL_PARTITIONS})",
    )
    assert cluster.finished_tasks(victim) - before, "the restarted worker ran no task"


def test_releasing_every_session_empties_the_workspace(cluster: Cluster, client: Client) -> None:
    for session in list(client.sessions):
        client.stop(session)
    assert [path.name for path in cluster.workspace.iterdir()] == [PRIVATE_DIR]
