"""Quotas per user through a gateway started with small limits.

Each test has a gateway of its own (the Spark Connect server is shared), so
one test's sessions never count against another's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from connect_plugin.server.gateway import Gateway
from tests.integration.support import (
    Upstream,
    new_session,
    serving,
    table_folders,
    temp_table_names,
)

BYTES_QUOTA = 200_000
"""Far above a one-row table, far below the ~1 MB of ``_big``."""

Open = Callable[[], SparkSession]


@pytest.fixture
def small_gateway(upstream: Upstream, tmp_path: Path) -> Iterator[Gateway]:
    with serving(
        upstream, tmp_path / "ws", quota_sessions_per_user=2, quota_tables_per_session=2,
        quota_bytes_per_session=BYTES_QUOTA,
    ) as running:  # fmt: skip
        yield running


@pytest.fixture
def open_session(small_gateway: Gateway) -> Iterator[Open]:
    opened: list[SparkSession] = []

    def open_one() -> SparkSession:
        opened.append(new_session(small_gateway.address))
        return opened[-1]

    yield open_one
    for session in opened:
        session.stop()


def _small(spark: SparkSession, name: str, replace: bool = False) -> None:
    verb = "CREATE OR REPLACE" if replace else "CREATE"
    spark.sql(f"{verb} TEMPORARY TABLE {name} AS SELECT 1 AS x").collect()


def _big(spark: SparkSession, name: str) -> None:
    spark.sql(
        f"CREATE TEMPORARY TABLE {name} AS "
        "SELECT sha2(CAST(id AS STRING), 256) AS h FROM range(20000)"
    ).collect()


def _refused(action: Callable[[], object], *names: str) -> str:
    with pytest.raises(PySparkException, match=r"CONNECT_PLUGIN\.QUOTA_EXCEEDED") as refused:
        action()
    assert refused.value.getGrpcStatusCode() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    message = str(refused.value)
    for name in names:
        assert name in message, (name, message)
    return message


def test_tables_per_session(open_session: Open) -> None:
    spark = open_session()
    _small(spark, "one")
    _small(spark, "two")
    _refused(lambda: _small(spark, "three"), "quota_tables_per_session", "is 2", "holds 2")
    assert sorted(temp_table_names(spark)) == ["one", "two"]
    _small(spark, "two", replace=True)
    spark.sql("DROP TABLE one").collect()
    _small(spark, "three")
    assert sorted(temp_table_names(spark)) == ["three", "two"]


def test_sessions_holding_tables_per_user(open_session: Open) -> None:
    first, second, third = open_session(), open_session(), open_session()
    _small(first, "a")
    _small(second, "b")
    third.range(3).collect()
    _refused(lambda: _small(third, "c"), "quota_sessions_per_user", "is 2", "already has 2")
    assert temp_table_names(third) == []
    first.sql("DROP TABLE a").collect()
    _small(third, "c")
    assert temp_table_names(third) == ["c"]


def test_bytes_per_session_undoes_the_write(
    open_session: Open, small_gateway: Gateway
) -> None:
    spark = open_session()
    _small(spark, "kept")
    folders = table_folders(small_gateway.config.workspace, spark)
    message = _refused(lambda: _big(spark, "big"), "quota_bytes_per_session", str(BYTES_QUOTA))
    assert "would hold" in message
    assert temp_table_names(spark) == ["kept"]
    assert table_folders(small_gateway.config.workspace, spark) == folders
    with pytest.raises(PySparkException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.table("big").collect()
    session = small_gateway.sessions.find(spark.client._user_id or "", spark.session_id)
    assert session is not None
    assert sorted(session.tables) == ["kept"]


def test_a_clone_counts_as_a_session(open_session: Open) -> None:
    first, second = open_session(), open_session()
    _small(first, "a")
    _small(second, "b")
    # pyspark's cloneSession() raises the gRPC error as it came.
    with pytest.raises(grpc.RpcError) as refused:
        first.cloneSession()
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    details = refused.value.details()  # type: ignore[attr-defined]
    assert "QUOTA_EXCEEDED" in details
    assert f"clone of session [{first.session_id}]" in details
    assert "quota_sessions_per_user is 2" in details
    second.sql("DROP TABLE b").collect()
    clone = first.cloneSession()
    try:
        assert temp_table_names(clone) == ["a"]
    finally:
        clone.stop()


def test_zero_means_no_limit(upstream: Upstream, tmp_path: Path) -> None:
    no_limits = dict.fromkeys(
        ("quota_sessions_per_user", "quota_tables_per_session", "quota_bytes_per_session"), 0
    )
    with serving(upstream, tmp_path / "ws", **no_limits) as running:
        spark = new_session(running.address)
        try:
            for index in range(3):
                _small(spark, f"t{index}")
            _big(spark, "big")
            assert sorted(temp_table_names(spark)) == ["big", "t0", "t1", "t2"]
        finally:
            spark.stop()


def test_a_change_that_would_pass_the_bytes_quota_is_refused_and_undone(
    open_session: Open, small_gateway: Gateway
) -> None:
    spark = open_session()
    spark.sql("CREATE TEMPORARY TABLE grows AS SELECT id, CAST(id AS STRING) AS h FROM range(20000)")
    folders = table_folders(small_gateway.config.workspace, spark)
    before = spark.table("grows").orderBy("id").collect()
    message = _refused(
        lambda: spark.sql("UPDATE grows SET h = sha2(h, 256)").collect(),
        "quota_bytes_per_session",
        "was not changed",
    )
    assert "[grows]" in message
    assert spark.table("grows").orderBy("id").collect() == before
    assert table_folders(small_gateway.config.workspace, spark) == folders
    (answer,) = spark.sql("DELETE FROM grows WHERE id >= 10").collect()
    assert answer.num_affected_rows == 19990
