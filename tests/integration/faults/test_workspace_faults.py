"""The workspace fails under the gateway: not writable, full (under a CTTAS or an UPDATE),
folders removed.

Each fault is real: an immutable folder (``chattr +i``, since root ignores
modes; mode 0500 otherwise), a size-limited tmpfs as the workspace (needs
root; skipped otherwise), ``rmtree`` of live folders. The client gets an
error naming the table and the path, everything else of the session keeps
working, and the workspace, registry and Spark agree afterwards.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from connect_plugin.server.embedded import free_port
from tests.integration.faults.gateway_process import GatewayProcess
from tests.integration.faults.workspace_check import (
    assert_consistent,
    assert_names,
    error_of,
    unwritable,
    workspace_folders,
)
from tests.integration.support import Upstream, new_session

SMALL_DISK = "4m"
HUGE_ROWS = 1_000_000


def test_unwritable_workspace_gives_a_clear_error_and_keeps_the_session(
    gateway_process: GatewayProcess, open_session: Callable[[], SparkSession]
) -> None:
    gateway = gateway_process
    spark = open_session()
    spark.sql("CREATE TEMPORARY TABLE kept AS SELECT id FROM range(10)")
    folder = gateway.workspace / spark.client._session_id

    with unwritable(folder):
        message = error_of(spark, "CREATE TEMPORARY TABLE blocked AS SELECT id FROM range(5)")
        assert_names(message, "[blocked]", str(folder))
        assert spark.table("kept").count() == 10
        assert spark.sql("SELECT count(*) AS n FROM kept JOIN range(5) USING (id)").first().n == 5  # type: ignore[union-attr]
        assert gateway.rows("SELECT name FROM temp_tables WHERE state != 'ready'") == []
    assert_consistent(gateway, {spark: {"kept": 10}}, dead={spark: ["blocked"]})

    # A new session cannot even get its folder while the workspace root is unwritable.
    fresh = open_session()
    with unwritable(gateway.workspace):
        message = error_of(fresh, "CREATE TEMPORARY TABLE first AS SELECT 1 AS x")
        assert_names(message, "[first]", fresh.client._session_id)
        assert fresh.range(3).count() == 3
    assert_consistent(gateway, {spark: {"kept": 10}, fresh: {}}, dead={fresh: ["first"]})

    spark.sql("CREATE TEMPORARY TABLE blocked AS SELECT id FROM range(5)")
    fresh.sql("CREATE TEMPORARY TABLE first AS SELECT 1 AS x")
    assert_consistent(gateway, {spark: {"kept": 10, "blocked": 5}, fresh: {"first": 1}})


@dataclasses.dataclass
class _OwnRegistryGateway(GatewayProcess):
    registry_file: Path = Path()

    @property
    def registry(self) -> Path:
        return self.registry_file


@pytest.fixture
def small_disk_gateway(
    upstream: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[GatewayProcess]:
    """A gateway whose workspace is a tmpfs of ``SMALL_DISK``: a disk that really fills up.

    The registry lives on another disk (``registry_path``): Spark keeps the
    files of a write that failed for lack of space open after they are
    deleted, so the full disk stays full, and a registry on it could not
    record anything either.
    """
    workspace = tmp_path / "small-disk"
    workspace.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a size-limited folder needs root (mount -t tmpfs); see the unwritable test")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SMALL_DISK}", "tmpfs", str(workspace)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs: {mounted.stderr.strip()}")
    registry = tmp_path / "registry.sqlite3"
    monkeypatch.setenv("CONNECT_PLUGIN_REGISTRY_PATH", str(registry))
    process = _OwnRegistryGateway(
        upstream=upstream.address,
        workspace=workspace,
        port=free_port(),
        log_path=tmp_path / "gateway.log",
        registry_file=registry,
    )
    try:
        process.start()
        yield process
    finally:
        process.kill()
        subprocess.run(["umount", "-l", str(workspace)], check=False)


def test_full_disk_fails_the_cttas_cleanly(small_disk_gateway: GatewayProcess) -> None:
    gateway = small_disk_gateway
    spark = new_session(gateway.address)
    folder = gateway.workspace / spark.client._session_id
    try:
        spark.sql("CREATE TEMPORARY TABLE kept AS SELECT id FROM range(10)")
        message = error_of(
            spark,
            "CREATE TEMPORARY TABLE huge AS SELECT id, sha2(CAST(id AS STRING), 256) AS h "
            f"FROM range({HUGE_ROWS})",
        )
        assert_names(message, "[huge]", str(folder))
        assert "No space left on device" in message, message
        assert_consistent(gateway, {spark: {"kept": 10}}, dead={spark: ["huge"]})
        free = shutil.disk_usage(gateway.workspace).free
        print(f"free on the full disk after the failed CTTAS: {free} bytes")
        # Spark may hold the deleted files of the failed write open for a while, so the
        # disk can stay full: the next CTTAS then fails as cleanly as the first.
        try:
            spark.sql("CREATE TEMPORARY TABLE after AS SELECT id FROM range(7)")
        except PySparkException as exc:
            assert_names(str(exc), "[after]", str(folder))
            assert_consistent(gateway, {spark: {"kept": 10}}, dead={spark: ["after", "huge"]})
        else:
            assert_consistent(gateway, {spark: {"kept": 10, "after": 7}})
        assert spark.sql("SELECT sum(id) AS s FROM kept").first().s == 45  # type: ignore[union-attr]
    finally:
        spark.stop()
    assert workspace_folders(gateway.workspace) == set()
    assert gateway.rows("SELECT * FROM temp_tables") == []


def test_full_disk_fails_an_update_and_keeps_the_table(small_disk_gateway: GatewayProcess) -> None:
    gateway = small_disk_gateway
    spark = new_session(gateway.address)
    folder = gateway.workspace / spark.client._session_id
    try:
        spark.sql(
            "CREATE TEMPORARY TABLE t AS SELECT id, sha2(CAST(id AS STRING), 256) AS h "
            "FROM range(10000)"
        )
        before = workspace_folders(gateway.workspace)
        message = error_of(
            spark,
            "UPDATE t SET h = concat_ws('', transform(sequence(1, 40), "
            "i -> sha2(concat(h, CAST(i AS STRING)), 256))) WHERE id % 2 = 0",
        )
        assert_names(message, "[t] was not changed", str(folder))
        assert "No space left on device" in message, message
        unchanged = spark.sql("SELECT count(*) AS n, max(length(h)) AS longest FROM t").first()
        assert unchanged is not None
        assert (unchanged.n, unchanged.longest) == (10000, 64)
        assert workspace_folders(gateway.workspace) == before
        assert_consistent(gateway, {spark: {"t": 10000}})
    finally:
        spark.stop()
    assert workspace_folders(gateway.workspace) == set()
    assert gateway.rows("SELECT * FROM temp_tables") == []


def _location(gateway: GatewayProcess, spark: SparkSession, name: str) -> Path:
    (row,) = gateway.rows(
        "SELECT location FROM temp_tables WHERE session_id = ? AND name_key = ?",
        spark.client._session_id,
        name,
    )
    return Path(str(row[0]))


def test_folders_removed_under_the_gateway(
    gateway_process: GatewayProcess, open_session: Callable[[], SparkSession]
) -> None:
    gateway = gateway_process
    spark = open_session()
    spark.sql("CREATE TEMPORARY TABLE a AS SELECT id FROM range(10)")
    spark.sql("CREATE TEMPORARY TABLE b AS SELECT id FROM range(20)")
    lost = _location(gateway, spark, "a")
    shutil.rmtree(lost)

    message = error_of(spark, "SELECT count(*) FROM a")
    assert str(lost) in message, message
    assert spark.table("b").count() == 20
    listed = {r["name"]: r for r in spark.sql("SHOW TEMPORARY TABLES").collect()}
    assert sorted(listed) == ["a", "b"]
    spark.sql("DROP TABLE a")
    assert_consistent(gateway, {spark: {"b": 20}}, dead={spark: ["a"]})
    spark.sql("CREATE TEMPORARY TABLE a AS SELECT id FROM range(3)")
    assert_consistent(gateway, {spark: {"a": 3, "b": 20}})

    # The whole session folder goes: new tables still work, the lost ones can be dropped.
    shutil.rmtree(gateway.workspace / spark.client._session_id)
    spark.sql("CREATE TEMPORARY TABLE c AS SELECT id FROM range(4)")
    spark.sql("DROP TABLE a")
    spark.sql("DROP TABLE b")
    assert_consistent(gateway, {spark: {"c": 4}}, dead={spark: ["a", "b"]})

    released = spark.client._session_id
    shutil.rmtree(gateway.workspace / released)
    spark.stop()
    assert workspace_folders(gateway.workspace) == set()
    assert gateway.rows("SELECT * FROM temp_tables") == []
    assert gateway.rows("SELECT * FROM sessions") == []
