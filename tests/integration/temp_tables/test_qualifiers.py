"""One qualifier for temp tables, Spark's own for temporary views: ``session.`` (and
``system.session.``), in every statement the gateway handles; Drill's ``tmp.`` is retired
with an error naming ``session.``, and never reaches a database named ``tmp``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

import connect_plugin
from tests.integration.support import temp_table_names


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


@pytest.fixture
def database_tmp(direct: SparkSession) -> Iterator[None]:
    direct.sql("CREATE DATABASE IF NOT EXISTS tmp")
    direct.sql("DROP TABLE IF EXISTS tmp.t")
    direct.sql("CREATE TABLE tmp.t USING parquet AS SELECT 'permanent' AS s")
    try:
        yield
    finally:
        direct.sql("DROP DATABASE tmp CASCADE")


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
