"""One qualifier for temp tables, Spark's own for temporary views: ``session.`` (and
``system.session.``), in every statement the gateway handles; Drill's ``tmp.`` is retired
with an error naming ``session.``, and never reaches a database named ``tmp``. A database
named ``session`` is said at start-up, and a statement naming ``session.t`` where ``t`` is no
temporary table or view of the session is refused rather than run on the permanent table."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

import connect_plugin
from tests.integration.support import Upstream, serving, temp_table_names


def _rows(spark: SparkSession, query: str) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in spark.sql(query).collect())


def test_session_qualifies_a_temp_table_in_every_statement(spark: SparkSession) -> None:
    spark.sql("CREATE TEMPORARY TABLE session.q AS SELECT id FROM range(4)")
    spark.sql("INSERT INTO session.q VALUES (10)")
    spark.sql("UPDATE system.session.q SET id = id + 1 WHERE id < 2")
    spark.sql("DELETE FROM session.q WHERE id = 3")
    spark.sql(
        "MERGE INTO session.q AS q USING (SELECT 10 AS id) AS s ON q.id = s.id "
        "WHEN MATCHED THEN DELETE"
    )
    assert _rows(spark, "SELECT * FROM session.q JOIN (SELECT 2 AS id) USING (id)") == [(2,), (2,)]
    assert _rows(spark, "SELECT * FROM system.session.q") == [(1,), (2,), (2,)]
    assert connect_plugin.temp_table(spark, "session.q").count() == 3
    connect_plugin.create_temp_table(spark.range(1), "system.session.r")
    spark.sql("TRUNCATE TABLE session.r")
    assert connect_plugin.temp_table(spark, "system.session.r").count() == 0
    assert temp_table_names(spark) == ["q", "r"]
    spark.sql("DROP TABLE session.q")
    spark.sql("DROP TABLE system.session.r")
    assert temp_table_names(spark) == []


@contextlib.contextmanager
def _permanent_table_t(direct: SparkSession, database: str) -> Iterator[None]:
    """A permanent database ``database`` with a table ``t`` of one row, 'permanent'."""
    direct.sql(f"CREATE DATABASE IF NOT EXISTS spark_catalog.{database}")
    direct.sql(f"DROP TABLE IF EXISTS spark_catalog.{database}.t")
    direct.sql(f"CREATE TABLE spark_catalog.{database}.t USING parquet AS SELECT 'permanent' AS s")
    try:
        yield
    finally:
        direct.sql(f"DROP DATABASE spark_catalog.{database} CASCADE")


@pytest.fixture
def database_tmp(direct: SparkSession) -> Iterator[None]:
    with _permanent_table_t(direct, "tmp"):
        yield


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE TEMPORARY TABLE tmp.u AS SELECT 1 AS x",
        "DROP TABLE tmp.t",
        "DROP TABLE IF EXISTS tmp.t",
        "UPDATE tmp.t SET s = 'changed'",
        "DELETE FROM tmp.t",
        "INSERT INTO tmp.t VALUES ('x')",
        "TRUNCATE TABLE tmp.t",
    ],
)
def test_the_retired_tmp_qualifier_names_session_and_never_reaches_a_database_tmp(
    spark: SparkSession, direct: SparkSession, database_tmp: None, statement: str
) -> None:
    spark.sql("CREATE TEMPORARY TABLE t AS SELECT 'temp' AS s")
    with pytest.raises(PySparkException, match=r"tmp\. qualifier of temporary tables is retired.*session\."):
        spark.sql(statement).collect()
    assert _rows(spark, "SELECT * FROM t") == [("temp",)]
    assert _rows(direct, "SELECT * FROM tmp.t") == [("permanent",)]
    assert _rows(spark, "SELECT * FROM tmp.t") == [("permanent",)]
    assert temp_table_names(spark) == ["t"]


@pytest.fixture
def database_session(direct: SparkSession) -> Iterator[None]:
    """A permanent database named like the qualifier, with a table ``t``."""
    with _permanent_table_t(direct, "session"):
        yield


AMBIGUOUS = [
    "DROP TABLE session.t",
    "DROP TABLE IF EXISTS session.t",
    "INSERT INTO session.t VALUES ('x')",
    "UPDATE session.t SET s = 'changed'",
    "DELETE FROM session.t",
    "TRUNCATE TABLE session.t",
    "MERGE INTO session.t USING (SELECT 'x' AS s) src ON t.s = src.s WHEN MATCHED THEN DELETE",
]


@pytest.mark.parametrize("other_table", [False, True])
def test_session_dot_a_name_that_is_no_temp_table_never_reaches_a_database_session(
    spark: SparkSession, direct: SparkSession, database_session: None, other_table: bool
) -> None:
    if other_table:
        spark.sql("CREATE TEMPORARY TABLE u AS SELECT 1 AS x")
    for statement in AMBIGUOUS:
        with pytest.raises(PySparkException) as refused:
            spark.sql(statement).collect()
        assert refused.value.getCondition() == "CONNECT_PLUGIN.AMBIGUOUS_SESSION_QUALIFIER", statement
        assert "spark_catalog.session.t" in str(refused.value)
        assert _rows(direct, "SELECT * FROM spark_catalog.session.t") == [("permanent",)]


def test_with_a_database_session_a_temp_table_and_spark_catalog_names_keep_working(
    spark: SparkSession, direct: SparkSession, database_session: None
) -> None:
    with pytest.raises(PySparkException, match="AMBIGUOUS_SESSION_QUALIFIER"):
        spark.createDataFrame([("x",)], "s string").write.saveAsTable("session.t", mode="append")
    spark.sql("INSERT INTO spark_catalog.session.t VALUES ('also permanent')")
    spark.sql("CREATE TEMPORARY TABLE t AS SELECT 'temp' AS s UNION ALL SELECT 'gone'")
    spark.sql("DELETE FROM session.t WHERE s = 'gone'")
    spark.sql("INSERT INTO session.t VALUES ('inserted')")
    assert _rows(spark, "SELECT * FROM session.t") == [("inserted",), ("temp",)]
    spark.sql("DROP TABLE session.t")
    assert _rows(direct, "SELECT * FROM spark_catalog.session.t") == [
        ("also permanent",),
        ("permanent",),
    ]


def test_the_gateway_says_at_start_up_that_a_database_session_exists(
    upstream: Upstream, tmp_path: Path, database_session: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="connect_plugin")
    with serving(upstream, tmp_path):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _said_database(caplog):
            time.sleep(0.1)
    assert _said_database(caplog), [r.getMessage() for r in caplog.records]


def _said_database(caplog: pytest.LogCaptureFixture) -> bool:
    return any(
        r.levelno == logging.WARNING and "has a database named session" in r.getMessage()
        for r in caplog.records
    )
