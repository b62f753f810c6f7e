"""INSERT into a temp table is checked like CTTAS where the table's format refuses values.

A refused INSERT leaves the table's data files as they were, INSERT OVERWRITE
included (its values are checked before Spark deletes anything); checked
INSERTs of every accepted shape still insert, and answer as Spark does.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from pyspark.errors.exceptions.base import PySparkException
from pyspark.sql import SparkSession

from tests.integration.support import table_folders


@pytest.mark.parametrize(
    ("fmt", "create", "insert", "message"),
    [
        ("text", "SELECT 'a' AS s", "INSERT INTO t SELECT 'b\nc'", r"NULL or a line break"),
        ("text", "SELECT 'a' AS s", "INSERT INTO t VALUES (NULL)", r"NULL or a line break"),
        ("orc", "SELECT 1 AS i, DATE'2024-01-01' AS d",
         "INSERT INTO t SELECT 2, TIMESTAMP'1582-10-10 10:00:00'",
         r"column \[d\] of type date holds a date or timestamp in the days"),
        ("json", "SELECT 1 AS i, 'x' AS s", "INSERT OVERWRITE TABLE t SELECT 2, X'FF'",
         r"holds a string that is not UTF-8"),
        ("parquet PARTITIONED BY (k)", "SELECT 1 AS i, 'a' AS k", "INSERT INTO t VALUES (2, '')",
         r"partition folder name"),
        ("text", "SELECT 'a' AS s", "INSERT INTO t (s) VALUES ('b\r')", r"NULL or a line break"),
        ("orc", "SELECT 1 AS i, DATE'2024-01-01' AS d",
         "INSERT INTO t (D, i) SELECT DATE'1582-10-14', 2", r"column \[d\] of type date holds"),
        ("text PARTITIONED BY (k)", "SELECT 'a' AS s, 1 AS k", "INSERT INTO t (k) VALUES (2)",
         r"column \[s\] of type string holds NULL or a line break"),
        ("json", "SELECT 1 AS i, 'x' AS s", "INSERT INTO t (i, nope) VALUES (2, 'y')",
         r"INSERT into temporary table \[t\] \(i, nope\): no column \[nope\] in the table"),
        ("json", "SELECT 1 AS i, 'x' AS s", "INSERT INTO t (s) VALUES (2, 'y')",
         r"the query gives 2 columns for the 1 listed"),
        ("json", "SELECT 1 AS i, 'x' AS s", "INSERT INTO t (s, S) VALUES ('x', 'y')",
         r"a column is listed twice"),
        ("parquet PARTITIONED BY (k)", "SELECT 1 AS i, 'a' AS k",
         "INSERT INTO t PARTITION (k = 'b') SELECT 2",
         r"INSERT into temporary table \[t\] with a PARTITION clause cannot be checked: parquet "
         r"cannot hold some values of \[k\].*write INSERT INTO t \[\(columns\)\] SELECT"),
        ("json", "SELECT 1 AS i, 'x' AS s", "INSERT INTO t BY NAME SELECT 'y' AS s, 2 AS i",
         r"with BY NAME cannot be checked"),
    ],
    ids=["text-line-break", "text-null", "orc-date", "json-not-utf8-overwrite",
         "empty-partition", "listed-line-break", "listed-orc-date", "unlisted-text-null",
         "listed-unknown", "listed-too-few", "listed-twice", "partition-clause", "by-name"],
)
def test_insert_is_checked_like_create(
    spark: SparkSession, workspace: Path, fmt: str, create: str, insert: str, message: str
) -> None:
    spark.sql(f"CREATE TEMPORARY TABLE t USING {fmt} AS {create}")
    (folder,) = table_folders(workspace, spark)
    files = data_files(folder)
    with pytest.raises(PySparkException, match=message):
        spark.sql(insert)
    assert data_files(folder) == files
    assert spark.table("t").count() == 1


def data_files(folder: Path) -> list[Path]:
    """The files a read of the table sees (Spark's hidden ``_`` and ``.`` ones left out)."""
    return sorted(
        p for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(("_", ".")) for part in p.relative_to(folder).parts)
    )


def test_checked_inserts_still_insert(spark: SparkSession) -> None:
    spark.sql("CREATE TEMPORARY TABLE t USING text AS SELECT 'a' AS s")
    spark.sql("INSERT INTO t VALUES ('b')")
    spark.sql("INSERT INTO TABLE t SELECT 'c' UNION ALL SELECT 'd'")
    spark.sql("INSERT INTO t (SELECT 'e')")
    spark.sql("INSERT INTO t WITH x AS (SELECT 'f' AS s) SELECT s FROM x")
    spark.sql("INSERT INTO t (S) VALUES ('g')")
    assert sorted(r.s for r in spark.table("t").collect()) == ["a", "b", "c", "d", "e", "f", "g"]
    assert spark.sql("INSERT INTO t SELECT 'x'").columns == []
    spark.sql("INSERT OVERWRITE t SELECT 'h'")
    assert [r.s for r in spark.table("t").collect()] == ["h"]


def test_a_column_list_fills_the_other_columns_with_null(spark: SparkSession) -> None:
    spark.sql(
        "CREATE TEMPORARY TABLE t USING csv PARTITIONED BY (k) AS "
        "SELECT 1 AS i, 'x' AS s, DATE'2024-01-01' AS d, 'a' AS k"
    )
    spark.sql("INSERT INTO t (k, d, i) VALUES ('b', DATE'2024-02-02', 2)")
    spark.sql("INSERT INTO t (s, k) SELECT 'three', 'c'")
    rows = sorted((tuple(r) for r in spark.table("t").collect()), key=lambda r: r[3])
    assert rows == [
        (1, "x", datetime.date(2024, 1, 1), "a"),
        (2, None, datetime.date(2024, 2, 2), "b"),
        (None, "three", None, "c"),
    ]


def test_dataframe_insert_into_is_checked(spark: SparkSession) -> None:
    spark.sql("CREATE TEMPORARY TABLE t USING orc AS SELECT 1 AS i, DATE'2024-01-01' AS d")
    good = spark.createDataFrame([(2, datetime.date(1582, 10, 15))], "i int, d date")
    bad = spark.createDataFrame([(3, datetime.date(1582, 10, 6))], "i int, d date")
    good.write.insertInto("t")
    with pytest.raises(PySparkException, match=r"column \[d\] of type date holds"):
        bad.write.insertInto("t")
    assert sorted(r.i for r in spark.table("t").collect()) == [1, 2]
