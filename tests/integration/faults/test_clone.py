"""CloneSession: the clone gets temp tables of its own, and either side can go first.

``spark.cloneSession()`` of the stock client goes through a gateway process
in front of the test session's Spark Connect server. Spark copies the
session's temporary views; the gateway gives the clone its own copy of each
table (hard links in the clone's folder), so dropping, replacing, inserting
into or releasing one side never changes what the other reads.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from tests.integration.faults.gateway_process import GatewayProcess, wait_until
from tests.integration.faults.workspace_check import (
    assert_consistent,
    assert_names,
    unwritable,
    workspace_folders,
)
from tests.integration.support import new_session

CLEANUP_TIMEOUT_S = 30.0


def _tables(spark: SparkSession) -> None:
    spark.sql("CREATE TEMPORARY TABLE plain AS SELECT id, id * 2 AS twice FROM range(100)")
    spark.sql(
        "CREATE TEMPORARY TABLE parts USING csv PARTITIONED BY (k) AS "
        "SELECT id, CAST(id % 3 AS STRING) AS k FROM range(30)"
    )


def _location(gateway: GatewayProcess, spark: SparkSession, name: str) -> Path:
    (row,) = gateway.rows(
        "SELECT location FROM temp_tables WHERE session_id = ? AND name_key = ?",
        spark.client._session_id,
        name,
    )
    return Path(str(row[0]))


def _data_files(folder: Path) -> dict[Path, int]:
    """Data file (relative path) -> inode."""
    return {
        path.relative_to(folder): path.stat().st_ino
        for path in folder.rglob("*")
        if path.is_file() and not path.name.startswith((".", "_"))
    }


def _all_gone(gateway: GatewayProcess) -> None:
    wait_until(lambda: not workspace_folders(gateway.workspace), CLEANUP_TIMEOUT_S, "cleanup")
    assert gateway.rows("SELECT * FROM temp_tables") == []
    assert gateway.rows("SELECT * FROM sessions") == []


def test_clone_outlives_the_original_released_first(
    gateway_process: GatewayProcess,
    open_session: Callable[[], SparkSession],
    clone_session: Callable[..., SparkSession],
) -> None:
    gateway = gateway_process
    spark = open_session()
    _tables(spark)
    began = time.monotonic()
    clone = clone_session(spark)
    print(f"clone with 2 tables: {time.monotonic() - began:.3f} s")

    assert clone.client._session_id != spark.client._session_id
    both = {"plain": 100, "parts": 30}
    assert_consistent(gateway, {spark: both, clone: both})
    for name in both:
        original, copy = _location(gateway, spark, name), _location(gateway, clone, name)
        assert copy.parent.name == clone.client._session_id
        assert _data_files(copy) == _data_files(original), f"[{name}] is not the same files"
    assert sorted(clone.table("parts").where("k = '1'").toPandas()["id"]) == list(range(1, 30, 3))

    # Each side changes its own tables only.
    spark.sql("CREATE OR REPLACE TEMPORARY TABLE plain AS SELECT id FROM range(7)")
    clone.sql("DROP TABLE parts")
    assert clone.table("plain").count() == 100
    assert clone.sql("SELECT sum(twice) AS s FROM plain").first().s == 9900  # type: ignore[union-attr]
    assert_consistent(
        gateway, {spark: {"plain": 7, "parts": 30}, clone: {"plain": 100}}, dead={clone: ["parts"]}
    )

    spark.stop()
    wait_until(
        lambda: not (gateway.workspace / spark.client._session_id).exists(),
        CLEANUP_TIMEOUT_S,
        "the original's folder to go",
    )
    assert_consistent(gateway, {clone: {"plain": 100}})
    clone.sql("CREATE TEMPORARY TABLE later AS SELECT 1 AS x")
    assert_consistent(gateway, {clone: {"plain": 100, "later": 1}})

    clone.stop()
    _all_gone(gateway)


def test_original_outlives_the_clone_released_first(
    gateway_process: GatewayProcess,
    open_session: Callable[[], SparkSession],
    clone_session: Callable[..., SparkSession],
) -> None:
    gateway = gateway_process
    spark = open_session()
    _tables(spark)
    chosen = str(uuid.uuid4())
    clone = clone_session(spark, chosen)
    assert clone.client._session_id == chosen

    clone.sql("INSERT INTO plain SELECT id, 0 FROM range(100, 150)")
    clone.sql("INSERT OVERWRITE parts SELECT 99, '9'")
    assert_consistent(
        gateway, {spark: {"plain": 100, "parts": 30}, clone: {"plain": 150, "parts": 1}}
    )

    clone.stop()
    wait_until(
        lambda: not (gateway.workspace / chosen).exists(), CLEANUP_TIMEOUT_S, "the clone's folder"
    )
    assert_consistent(gateway, {spark: {"plain": 100, "parts": 30}})
    assert spark.sql("SELECT max(id) AS m FROM parts").first().m == 29  # type: ignore[union-attr]

    spark.stop()
    _all_gone(gateway)


def test_a_table_inserted_into_is_cloned_with_all_its_rows(
    gateway_process: GatewayProcess,
    open_session: Callable[[], SparkSession],
    clone_session: Callable[..., SparkSession],
) -> None:
    original = open_session()
    original.sql("CREATE TEMPORARY TABLE grown AS SELECT id FROM range(5)")
    original.sql("INSERT INTO grown SELECT 100")
    clone = clone_session(original)
    assert sorted(r.id for r in clone.table("grown").collect()) == [0, 1, 2, 3, 4, 100]
    assert [r.name for r in clone.sql("SHOW TEMPORARY TABLES").collect()] == ["grown"]
    clone.sql("INSERT INTO grown SELECT 200")
    assert clone.table("grown").count() == 7
    assert original.table("grown").count() == 6
    for session in (clone, original):
        session.stop()
    _all_gone(gateway_process)


def test_clones_of_clones_and_of_sessions_without_tables(
    gateway_process: GatewayProcess,
    open_session: Callable[[], SparkSession],
    clone_session: Callable[..., SparkSession],
) -> None:
    gateway = gateway_process
    empty = open_session()
    empty.conf.set("spark.sql.shuffle.partitions", "3")  # Spark clones only sessions it has
    plain_clone = clone_session(empty)
    assert plain_clone.conf.get("spark.sql.shuffle.partitions") == "3"
    plain_clone.sql("CREATE TEMPORARY TABLE own AS SELECT 1 AS x")
    assert_consistent(gateway, {empty: {}, plain_clone: {"own": 1}})

    second = clone_session(plain_clone)
    third = clone_session(second)
    second.sql("DROP TABLE own")
    plain_clone.stop()
    assert_consistent(gateway, {empty: {}, second: {}, third: {"own": 1}}, dead={second: ["own"]})
    for session in (third, second, empty):
        session.stop()
    _all_gone(gateway)


def test_clone_waits_for_a_running_cttas(
    gateway_process: GatewayProcess,
    open_session: Callable[[], SparkSession],
    clone_session: Callable[..., SparkSession],
) -> None:
    gateway = gateway_process
    spark = open_session()
    spark.sql("CREATE TEMPORARY TABLE first AS SELECT 1 AS x")

    def create() -> None:
        spark.sql(
            "CREATE TEMPORARY TABLE slow AS SELECT id, sha2(CAST(id AS STRING), 256) AS h "
            "FROM range(1000000)"
        ).collect()

    worker = threading.Thread(target=create, daemon=True)
    worker.start()
    wait_until(
        lambda: gateway.rows("SELECT 1 FROM temp_tables WHERE state = 'creating'") != [],
        CLEANUP_TIMEOUT_S,
        "the CTTAS to start",
    )
    clone = clone_session(spark)
    worker.join(CLEANUP_TIMEOUT_S)
    assert not worker.is_alive()
    assert_consistent(
        gateway,
        {spark: {"first": 1, "slow": 1_000_000}, clone: {"first": 1, "slow": 1_000_000}},
    )


def test_clone_that_cannot_copy_fails_and_leaves_nothing(
    gateway_process: GatewayProcess,
    open_session: Callable[[], SparkSession],
    clone_session: Callable[..., SparkSession],
) -> None:
    gateway = gateway_process
    spark = open_session()
    _tables(spark)
    before = workspace_folders(gateway.workspace)
    chosen = str(uuid.uuid4())

    # pyspark's cloneSession() raises the gRPC error as it came.
    with unwritable(gateway.workspace), pytest.raises(grpc.RpcError) as caught:
        clone_session(spark, chosen)
    assert_names(str(caught.value), spark.client._session_id, "was not cloned", "[plain]", chosen)
    assert workspace_folders(gateway.workspace) == before
    assert gateway.rows("SELECT * FROM sessions WHERE session_id = ?", chosen) == []
    with pytest.raises(PySparkException, match="SESSION_CLOSED"):
        new_session(f"{gateway.address}/;session_id={chosen}").range(1).count()
    assert_consistent(gateway, {spark: {"plain": 100, "parts": 30}})

    clone = clone_session(spark)
    assert_consistent(
        gateway, {spark: {"plain": 100, "parts": 30}, clone: {"plain": 100, "parts": 30}}
    )


def test_gateway_killed_after_a_clone_keeps_both_sides(
    gateway_process: GatewayProcess,
    open_session: Callable[[], SparkSession],
    clone_session: Callable[..., SparkSession],
) -> None:
    gateway = gateway_process
    spark = open_session()
    _tables(spark)
    clone = clone_session(spark)
    gateway.kill()
    gateway.start()
    both = {"plain": 100, "parts": 30}
    assert_consistent(gateway, {spark: both, clone: both})
    spark.stop()
    assert_consistent(gateway, {clone: both})
    clone.stop()
    _all_gone(gateway)
