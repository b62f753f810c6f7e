"""Errors about a temp table name it as the statement did, and say what happened in a line.

Spark reads a temp table through a view over its files, which have no table
name: its own errors about a write into one say ``unknown``
(``INSERT_COLUMN_ARITY_MISMATCH``, ``INCOMPATIBLE_DATA_FOR_TABLE``,
``PARTITIONS_NOT_FOUND``). The gateway knows which table the statement
named and names it so, keeping Spark's class, state and exception. The
gateway's own checks of what a temp table holds fail the write in Spark
(``raise_error``, which Spark reports as ``USER_RAISED_EXCEPTION`` with its
JVM stack): the client gets their own class, state and message instead. A
permanent table's errors stay Spark's (issue 45, point 3).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pyspark.errors import AnalysisException, PySparkException, SparkRuntimeException
from pyspark.errors.exceptions.connect import SparkConnectGrpcException
from pyspark.sql import SparkSession

from connect_plugin.server.gateway import Gateway
from tests.integration.support import new_session


@pytest.fixture(scope="module")
def spark(gateway: Gateway) -> Iterator[SparkSession]:
    session = new_session(gateway.address)
    try:
        session.sql("CREATE TEMPORARY TABLE MyT AS SELECT 1 AS a, 'x' AS b")
        session.sql("CREATE TEMPORARY TABLE Parted (a INT, b INT) PARTITIONED BY (b)")
        session.sql("CREATE TEMPORARY TABLE Strict (id INT NOT NULL, v STRING)")
        session.sql("INSERT INTO Strict VALUES (1, 'kept')")
        yield session
    finally:
        session.stop()


def failure(action: Callable[[], Any]) -> SparkConnectGrpcException:
    with pytest.raises(PySparkException) as caught:
        action()
    assert isinstance(caught.value, SparkConnectGrpcException)
    return caught.value


def assert_short(exc: BaseException, most: int = 3) -> None:
    text = str(exc)
    assert len(text.splitlines()) <= most, text
    assert "JVM stacktrace" not in text
    assert "`unknown`" not in text


@pytest.mark.parametrize(
    ("statement", "condition", "table", "named"),
    [
        ("INSERT INTO MyT VALUES (1)", "INSERT_COLUMN_ARITY_MISMATCH.NOT_ENOUGH_DATA_COLUMNS",
         "`MyT`", "Cannot write to `MyT`, the reason is not enough data columns"),
        ("INSERT INTO myt SELECT 1, 'x', 3", "INSERT_COLUMN_ARITY_MISMATCH.TOO_MANY_DATA_COLUMNS",
         "`myt`", "Cannot write to `myt`, the reason is too many data columns"),
        ("INSERT INTO session.myt VALUES (1)",
         "INSERT_COLUMN_ARITY_MISMATCH.NOT_ENOUGH_DATA_COLUMNS",
         "`session`.`myt`", "Cannot write to `session`.`myt`, the reason"),
        ("INSERT INTO MYT SELECT array(1), 'x'", "INCOMPATIBLE_DATA_FOR_TABLE.CANNOT_SAFELY_CAST",
         "`MYT`", "Cannot write incompatible data for the table `MYT`: Cannot safely cast `a`"),
        ("INSERT INTO MyT BY NAME SELECT 1 AS a, 2 AS c", "INCOMPATIBLE_DATA_FOR_TABLE.EXTRA_COLUMNS",
         "`MyT`", "Cannot write incompatible data for the table `MyT`: Cannot write extra columns `c`"),
        ("INSERT INTO parted PARTITION (c = 1) VALUES (1)", None, None, "`parted`"),
    ],
    ids=["too-few", "too-many", "qualified", "cast", "by-name", "partition"],
)  # fmt: skip
def test_sparks_errors_about_a_temp_table_name_it_as_the_statement_does(
    spark: SparkSession, statement: str, condition: str | None, table: str | None, named: str
) -> None:
    """Spark's class and exception, the table named where Spark says ``unknown``; the
    partition clause's error (Spark's, or the gateway's own) names the table too."""
    caught = failure(lambda: spark.sql(statement))
    assert isinstance(caught, AnalysisException)
    if condition is not None:
        assert caught.getCondition() == condition
        assert caught.getMessageParameters()["tableName"] == table
    assert named in str(caught).splitlines()[0]
    assert_short(caught)


def test_a_dataframe_insert_into_a_temp_table_names_it(spark: SparkSession) -> None:
    frame = spark.createDataFrame([(1,)], "a INT")
    caught = failure(lambda: frame.write.insertInto("MYT"))
    assert caught.getCondition() == "INSERT_COLUMN_ARITY_MISMATCH.NOT_ENOUGH_DATA_COLUMNS"
    assert caught.getMessageParameters()["tableName"] == "`MYT`"
    assert "Cannot write to `MYT`" in str(caught)
    assert_short(caught)


NOT_NULL = (
    "[CONNECT_PLUGIN.TEMP_TABLE_NOT_NULL] Temporary table [{table}]: column [id] is declared "
    "NOT NULL and a row gives it NULL; the write stopped before committing any file (give "
    "the column a value in every row, or declare it without NOT NULL)"
)


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO Strict VALUES (2, 'x'), (NULL, 'y')",
        "INSERT INTO strict SELECT CAST(NULL AS INT), 'z'",
        "INSERT INTO Strict (v) VALUES ('no id')",
    ],
    ids=["values", "select", "column-list"],
)
def test_a_null_in_a_not_null_column_is_the_gateways_error_in_one_line(
    spark: SparkSession, statement: str
) -> None:
    caught = failure(lambda: spark.sql(statement))
    assert isinstance(caught, SparkRuntimeException)
    assert caught.getCondition() == "CONNECT_PLUGIN.TEMP_TABLE_NOT_NULL"
    assert caught.getSqlState() == "23502"
    assert str(caught) == NOT_NULL.format(table="Strict")
    message = NOT_NULL.format(table="Strict").removeprefix("[CONNECT_PLUGIN.TEMP_TABLE_NOT_NULL] ")
    assert caught.getMessageParameters() == {"message": message}
    assert_short(caught, most=1)
    assert [tuple(r) for r in spark.table("Strict").collect()] == [(1, "kept")]


def test_a_null_in_a_not_null_column_from_every_other_write(spark: SparkSession) -> None:
    writes: list[Callable[[], Any]] = [
        lambda: spark.createDataFrame([(None, "v")], "id INT, v STRING").write.insertInto("strict"),
        lambda: spark.sql("UPDATE Strict SET id = NULL"),
        lambda: spark.sql(
            "MERGE INTO Strict t USING (SELECT 2 AS id) s ON t.id = s.id "
            "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (NULL, 'z')"
        ),
        lambda: spark.sql("CREATE TEMP TABLE fresh (id INT NOT NULL) AS SELECT CAST(NULL AS INT)"),
    ]
    for write in writes:
        caught = failure(write)
        assert isinstance(caught, SparkRuntimeException)
        assert caught.getCondition() == "CONNECT_PLUGIN.TEMP_TABLE_NOT_NULL"
        assert caught.getSqlState() == "23502"
        assert "column [id] is declared NOT NULL and a row gives it NULL" in str(caught)
        assert_short(caught, most=1)
    assert [tuple(r) for r in spark.table("Strict").collect()] == [(1, "kept")]


def test_a_value_the_format_cannot_hold_is_the_gateways_error_in_one_line(
    spark: SparkSession,
) -> None:
    spark.sql("CREATE TEMP TABLE texts (s STRING) USING csv")
    caught = failure(lambda: spark.sql("INSERT INTO texts SELECT CAST(X'C328' AS STRING)"))
    assert isinstance(caught, SparkRuntimeException)
    assert caught.getCondition() == "CONNECT_PLUGIN.TEMP_TABLE_VALUE_NOT_HELD"
    assert str(caught).startswith(
        "[CONNECT_PLUGIN.TEMP_TABLE_VALUE_NOT_HELD] Temporary table [texts]: column [s] of "
        "type string holds a string that is not UTF-8, which csv cannot hold exactly"
    )
    assert_short(caught, most=1)


def test_a_permanent_tables_errors_stay_sparks(
    spark: SparkSession, direct: SparkSession, unique_name: str
) -> None:
    spark.sql(f"CREATE TABLE {unique_name} (a INT, b STRING) USING parquet")
    try:
        statement = f"INSERT INTO {unique_name} VALUES (1)"
        through_gateway = failure(lambda: spark.sql(statement))
        straight = failure(lambda: direct.sql(statement))
        assert str(through_gateway) == str(straight)
        assert through_gateway.getMessageParameters() == straight.getMessageParameters()
    finally:
        spark.sql(f"DROP TABLE {unique_name}")
