"""Declared temp tables: column definitions, with or without a query, as Databricks SQL takes them.

An empty declared table reads back with exactly the declared types; INSERTs
then fill it as they fill any temp table, and DuckDB, given the same
statements on its own temp table, ends with the same rows. A column list with
types casts a query's columns by position with Spark's own rules and errors.
Every refused statement leaves no folder, no view and no registry entry.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from pyspark.errors import (
    AnalysisException,
    ArithmeticException,
    ParseException,
    PySparkException,
)
from pyspark.sql import SparkSession
from pyspark.sql.connect.dataframe import DataFrame
from pyspark.sql.types import LongType, StringType, StructField, StructType

import connect_plugin
from connect_plugin.client.temp_tables import CreateTempTable
from tests.integration.support import table_folders, temp_table_names

DECLARED = "a INT NOT NULL, b STRING COMMENT 'the b', c DECIMAL(10,2), d DATE, e DOUBLE"
DUCKDB_DECLARED = DECLARED.replace(" COMMENT 'the b'", "")
INSERTS = (
    "INSERT INTO t VALUES (1, 'x', 1.25, DATE'2024-02-29', 0.5)",
    "INSERT INTO t VALUES (2, NULL, NULL, NULL, NULL), (3, 'z,\"q\"', -7.5, DATE'1999-12-31', -1)",
    "INSERT INTO t SELECT a + 10, b, c, d, e FROM t WHERE a < 3",
)


def _nothing_left_but(spark: SparkSession, workspace: Path, names: list[str]) -> None:
    assert len(table_folders(workspace, spark)) == len(names)
    assert temp_table_names(spark) == names
    assert [r.viewName for r in spark.sql("SHOW VIEWS").collect() if r.isTemporary] == names


@pytest.mark.parametrize("fmt", ["parquet", "orc", "json", "csv"])
def test_declared_table_is_empty_with_its_schema_and_takes_inserts_like_duckdb(
    spark: SparkSession, workspace: Path, fmt: str
) -> None:
    created = spark.sql(f"CREATE TEMPORARY TABLE t ({DECLARED}) USING {fmt}").collect()
    assert [tuple(r) for r in created] == [("t", 0)]
    table = spark.table("t")
    assert table.count() == 0
    assert [(f.name, f.dataType.simpleString()) for f in table.schema.fields] == [
        ("a", "int"), ("b", "string"), ("c", "decimal(10,2)"), ("d", "date"), ("e", "double")
    ]
    assert table.schema["b"].metadata == {"comment": "the b"}
    assert len(table_folders(workspace, spark)) == 1
    for statement in INSERTS:
        spark.sql(statement)
    with duckdb.connect() as duck:
        duck.sql(f"CREATE TEMPORARY TABLE t ({DUCKDB_DECLARED})")
        for statement in INSERTS:
            duck.sql(statement)
        expected = sorted(duck.sql("SELECT * FROM t").fetchall())
    assert sorted(tuple(r) for r in spark.table("t").collect()) == expected


def test_declared_clauses_replace_and_if_not_exists(spark: SparkSession, workspace: Path) -> None:
    spark.sql(
        "create temp table IF NOT EXISTS p (v STRING, k INT) USING json PARTITIONED BY (k) "
        "OPTIONS (compression 'gzip');"
    )
    spark.sql("INSERT INTO p VALUES ('one', 1), ('two', 2)")
    assert sorted(tuple(r) for r in spark.table("p").collect()) == [("one", 1), ("two", 2)]
    again = spark.sql("CREATE TEMP TABLE IF NOT EXISTS p (x INT)").collect()
    assert [r.ok for r in again] == [False]
    spark.sql("CREATE OR REPLACE TEMPORARY TABLE p (x BIGINT, y ARRAY<STRUCT<f: INT>>)")
    assert spark.table("p").count() == 0
    assert spark.table("p").schema.simpleString() == "struct<x:bigint,y:array<struct<f:int>>>"
    _nothing_left_but(spark, workspace, ["p"])


def test_typed_columns_cast_the_query_by_position(spark: SparkSession) -> None:
    spark.sql(
        "CREATE TEMP TABLE t (n BIGINT, x DOUBLE COMMENT 'measured', s STRING) "
        "AS SELECT 1 AS first, CAST(2.5 AS FLOAT) AS second, 'z' AS third"
    )
    table = spark.table("t")
    assert table.schema.simpleString() == "struct<n:bigint,x:double,s:string>"
    assert table.schema["x"].metadata == {"comment": "measured"}
    assert [tuple(r) for r in table.collect()] == [(1, 2.5, "z")]


def test_typed_columns_cast_values_as_duckdb_inserts_them(spark: SparkSession) -> None:
    columns = "n BIGINT, x DOUBLE, d DECIMAL(12,3), s STRING"
    values = "(1, CAST(0.5 AS FLOAT), 7, 'a'), (-2, CAST(-1.25 AS FLOAT), 12345678.5, NULL)"
    spark.sql(f"CREATE TEMP TABLE t ({columns}) USING csv AS VALUES {values}")
    with duckdb.connect() as duck:
        duck.sql(f"CREATE TEMPORARY TABLE t ({columns})")
        duck.sql(f"INSERT INTO t VALUES {values}")
        expected = sorted(duck.sql("SELECT * FROM t").fetchall())
    assert sorted(tuple(r) for r in spark.table("t").collect()) == expected


@pytest.mark.parametrize("columns", ["", " (n, s)", " (n BIGINT, s STRING)"])
def test_as_values(spark: SparkSession, columns: str) -> None:
    spark.sql(f"CREATE TEMP TABLE v{columns} AS VALUES (1, 'a'), (2, 'b')")
    rows = spark.table("v").orderBy(spark.table("v").columns[0]).collect()
    assert [tuple(r) for r in rows] == [(1, "a"), (2, "b")]
    if columns:
        assert spark.table("v").columns == ["n", "s"]


@pytest.mark.parametrize(
    ("statement", "error", "message"),
    [
        ("CREATE TEMP TABLE bad (a INT) AS SELECT 'x' AS s", AnalysisException,
         r"Temporary table \[bad\] was not created: .*INVALID_COLUMN_OR_FIELD_DATA_TYPE.*`a`"),
        ("CREATE TEMP TABLE bad (a INT) AS SELECT 5000000000 AS big", ArithmeticException,
         r"Temporary table \[bad\] was not created: .*CAST_OVERFLOW"),
        ("CREATE TEMP TABLE bad (a INT, b INT) AS SELECT 1 AS x", AnalysisException,
         r"temporary table \[bad\]: 2 columns are declared \(a, b\) but the query returns 1 \(x\)"),
        ("CREATE TEMP TABLE bad (a INT) AS VALUES (1, 2)", AnalysisException,
         r"1 columns are declared \(a\) but the query returns 2"),
        ("CREATE TEMP TABLE bad (m MAP<STRING, INT>) USING csv", AnalysisException,
         r"column \[m\] of type map<string,int> cannot be held exactly by csv.*parquet"),
        ("CREATE TEMP TABLE bad (a NOSUCHTYPE)", ParseException,
         r"Temporary table \[bad\] was not created: its column definitions \(a NOSUCHTYPE\) "
         r"are not valid"),
        ("CREATE TEMP TABLE bad (a INT DEFAULT 5)", ParseException,
         r"its column definitions \(a INT DEFAULT 5\) are not valid: \s*"
         r"\[PARSE_SYNTAX_ERROR\] Syntax error at or near 'DEFAULT'"),
        ("CREATE TEMP TABLE bad (v VARCHAR(3), s STRUCT<c: CHAR(2)>)", AnalysisException,
         r"temp tables keep no CHAR\(n\) or VARCHAR\(n\) \(VARCHAR\(3\), CHAR\(2\)\).*"
         r"declare the column STRING"),
        ("CREATE TEMP TABLE bad (a INT, A STRING)", AnalysisException,
         r"column \[A\] is declared twice"),
        ("CREATE TEMP TABLE bad (a INT, k STRING) PARTITIONED BY (z)", AnalysisException,
         r"partition column \[z\] is not in the select list \(a, k\)"),
        ("CREATE TEMP TABLE keeper (a INT)", AnalysisException,
         r"\[keeper\] already exists.*CREATE OR REPLACE"),
        ("CREATE TEMP TABLE bad (a INT) USING csv xyz", ParseException,
         r"expected USING, PARTITIONED BY, OPTIONS or AS at \[xyz\]"),
    ],
    ids=["string-into-int", "overflow", "too-few", "too-many", "map-in-csv", "unknown-type",
         "default", "char-varchar", "twice", "partition", "taken", "trailing"],
)
def test_refused_declarations_leave_nothing_behind(
    spark: SparkSession, workspace: Path, statement: str, error: type[Exception], message: str
) -> None:
    spark.sql("CREATE TEMP TABLE keeper AS SELECT 1 AS x")
    with pytest.raises(error, match=message):
        spark.sql(statement)
    _nothing_left_but(spark, workspace, ["keeper"])
    assert [tuple(r) for r in spark.table("keeper").collect()] == [(1,)]



def test_python_api_declares_tables_from_ddl_or_a_struct_type(
    spark: SparkSession, workspace: Path
) -> None:
    created = connect_plugin.create_temp_table(spark, "t", schema="a INT, b STRING", format="csv")
    assert tuple(created) == ("t", 0)
    spark.sql("INSERT INTO t VALUES (1, 'x')")
    assert [tuple(r) for r in spark.table("t").collect()] == [(1, "x")]
    declared = StructType([StructField("n", LongType()), StructField("s", StringType())])
    connect_plugin.create_temp_table(spark, "u", schema=declared)
    assert spark.table("u").schema.simpleString() == "struct<n:bigint,s:string>"
    rows = spark.createDataFrame([(1, "a"), (2, "b")], "x INT, y STRING")
    connect_plugin.create_temp_table(rows, "v", schema="n BIGINT, s STRING", replace=True)
    assert spark.table("v").schema.simpleString() == "struct<n:bigint,s:string>"
    assert sorted(tuple(r) for r in spark.table("v").collect()) == [(1, "a"), (2, "b")]
    with pytest.raises(ValueError, match=r"give it schema="):
        connect_plugin.create_temp_table(spark, "w")
    with pytest.raises(ValueError, match=r"leave out column_names="):
        connect_plugin.create_temp_table(rows, "w", schema="n BIGINT, s STRING", column_names=["p", "q"])
    with pytest.raises(AnalysisException, match=r"1 columns are declared \(n\) but the query returns 2"):
        connect_plugin.create_temp_table(rows, "w", schema="n BIGINT")
    _nothing_left_but(spark, workspace, ["t", "u", "v"])


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        (CreateTempTable(None, "w", column_names=["a"], schema="a INT"),
         r"column names or column definitions, not both"),
        (CreateTempTable(None, "w"), r"\[w\] was not created: give it a query or column definitions"),
    ],
    ids=["names-and-definitions", "neither"],
)
def test_a_plugin_message_that_declares_nothing_or_twice_is_refused(
    spark: SparkSession, workspace: Path, plan: CreateTempTable, message: str
) -> None:
    with pytest.raises(AnalysisException, match=message):
        DataFrame(plan, spark).collect()
    assert temp_table_names(spark) == []
    assert table_folders(workspace, spark) == []


@pytest.mark.parametrize("fmt", ["parquet", "json"])
def test_not_null_refuses_null_on_every_write_as_duckdb_does(
    spark: SparkSession, workspace: Path, fmt: str
) -> None:
    spark.sql(f"CREATE TEMP TABLE t (a INT NOT NULL, b STRING) USING {fmt}")
    spark.sql("INSERT INTO t VALUES (1, 'kept')")
    refused = (
        "INSERT INTO t VALUES (2, 'x'), (NULL, 'y')",
        "INSERT INTO t (b) VALUES ('z')",
        "INSERT OVERWRITE t SELECT NULL, 'w'",
    )
    for statement in refused:
        with pytest.raises(PySparkException, match=r"column \[a\] is declared NOT NULL"):
            spark.sql(statement)
    frame = spark.createDataFrame([(None, "v")], "a INT, b STRING")
    with pytest.raises(PySparkException, match=r"column \[a\] is declared NOT NULL"):
        frame.write.insertInto("t")
    with pytest.raises(AnalysisException, match=r"\[a\] are declared NOT NULL"):
        spark.sql("INSERT INTO t BY NAME SELECT 'u' AS b, 3 AS a")
    rows = sorted(tuple(r) for r in spark.table("t").collect())
    with duckdb.connect() as duck:
        duck.sql("CREATE TEMPORARY TABLE t (a INT NOT NULL, b STRING)")
        duck.sql("INSERT INTO t VALUES (1, 'kept')")
        for statement in refused[:2]:
            with pytest.raises(duckdb.ConstraintException):
                duck.sql(statement)
        assert rows == sorted(duck.sql("SELECT * FROM t").fetchall()) == [(1, "kept")]
    assert spark.table("t").schema["a"].nullable
    with pytest.raises(PySparkException, match=r"column \[a\] is declared NOT NULL"):
        spark.sql("CREATE TEMP TABLE u (a INT NOT NULL) AS SELECT CAST(NULL AS INT)")
    spark.sql("CREATE TEMP TABLE v (a INT NOT NULL) AS SELECT try_cast(id AS INT) FROM range(3)")
    spark.sql("CREATE TEMP TABLE w AS SELECT 1 AS a")
    spark.sql("INSERT INTO w VALUES (NULL)")
    assert spark.table("w").count() == 2
    _nothing_left_but(spark, workspace, ["t", "v", "w"])
