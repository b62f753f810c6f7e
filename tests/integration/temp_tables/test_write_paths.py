"""Every DataFrame and SQL write to a temp table's name writes into the temp table, or is
refused; none makes a permanent table beside it. Overwrites are atomic rewrites.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import functions as sf

from tests.integration.support import assert_private, table_folders


def _rows(spark: SparkSession, name: str = "t") -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in spark.table(name).collect())


def _permanent_tables(spark: SparkSession) -> list[str]:
    return [r.tableName for r in spark.sql("SHOW TABLES IN default").collect() if not r.isTemporary]


@pytest.fixture
def table(spark: SparkSession) -> SparkSession:
    spark.sql("CREATE TEMPORARY TABLE t (id BIGINT, s STRING) USING json")
    spark.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    return spark


def test_save_as_table_appends_and_overwrites_by_column_name(
    table: SparkSession, workspace: Path
) -> None:
    spark = table
    spark.createDataFrame([("c", 3)], "s STRING, id INT").write.saveAsTable("t", mode="append")
    assert _rows(spark) == [(1, "a"), (2, "b"), (3, "c")]
    spark.createDataFrame([("z", 9)], "s STRING, id INT").write.saveAsTable("t", mode="overwrite")
    assert _rows(spark) == [(9, "z")]
    spark.createDataFrame([("y", 8)], "s STRING, id INT").write.saveAsTable("t", mode="ignore")
    assert _rows(spark) == [(9, "z")]
    with pytest.raises(PySparkException, match=r"temporary table \[t\] already exists"):
        spark.range(1).write.saveAsTable("t")
    assert "t" not in _permanent_tables(spark)
    assert len(table_folders(workspace, spark)) == 1
    assert [r["rows"] for r in spark.sql("SHOW TEMPORARY TABLES").collect()] == [1]


def test_write_to_appends_overwrites_where_its_condition_holds_and_refuses_the_rest(
    table: SparkSession,
) -> None:
    spark = table
    spark.createDataFrame([("c", 3)], "s STRING, id BIGINT").writeTo("t").append()
    spark.createDataFrame([(7, "q")], "id BIGINT, s STRING").writeTo("t").overwrite(
        sf.col("id") >= 2
    )
    assert _rows(spark) == [(1, "a"), (7, "q")]
    for write in ("create", "replace", "createOrReplace", "overwritePartitions"):
        with pytest.raises(PySparkException, match=rf"writeTo\(\[t\]\)\.{write}\(\)"):
            getattr(spark.range(1).writeTo("t"), write)()
    assert "t" not in _permanent_tables(spark)
    assert _rows(spark) == [(1, "a"), (7, "q")]


def test_an_overwrite_that_fails_leaves_the_table_as_it_was(
    table: SparkSession, workspace: Path
) -> None:
    spark = table
    folders = table_folders(workspace, spark)
    with pytest.raises(PySparkException, match="refused on purpose"):
        spark.sql("INSERT OVERWRITE t SELECT id, raise_error('refused on purpose') FROM range(3)")
    failing = spark.range(3).select("id", sf.raise_error(sf.lit("refused on purpose")).alias("s"))
    with pytest.raises(PySparkException, match="refused on purpose"):
        failing.write.insertInto("t", overwrite=True)
    with pytest.raises(PySparkException, match="refused on purpose"):
        failing.write.saveAsTable("t", mode="overwrite")
    assert _rows(spark) == [(1, "a"), (2, "b")]
    assert table_folders(workspace, spark) == folders
    spark.sql("INSERT OVERWRITE TABLE t (s, id) SELECT 'n', 5")
    spark.createDataFrame([(6, "m")], "id INT, s STRING").write.insertInto("t", overwrite=False)
    assert _rows(spark) == [(5, "n"), (6, "m")]
    spark.createDataFrame([(4, "k")], "id INT, s STRING").write.insertInto("t", overwrite=True)
    assert _rows(spark) == [(4, "k")]
    assert len(table_folders(workspace, spark)) == 1


def test_writes_to_other_names_reach_spark_unchanged(table: SparkSession) -> None:
    spark = table
    with pytest.raises(PySparkException) as refused:
        spark.range(1).writeTo("nowhere").append()
    assert refused.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"


OVERWRITES = (
    ("INSERT OVERWRITE", lambda spark, name, rows: spark.sql(f"INSERT OVERWRITE {name} {rows}")),
    (
        "insertInto(overwrite=True)",
        lambda spark, name, rows: spark.sql(rows).write.insertInto(name, overwrite=True),
    ),
)


@pytest.mark.parametrize("mode", ["dynamic", "STATIC"])
@pytest.mark.parametrize(("how", "overwrite"), OVERWRITES, ids=[o[0] for o in OVERWRITES])
def test_an_overwrite_of_a_partitioned_table_replaces_what_sparks_own_files_would(
    spark: SparkSession, tmp_path: Path, workspace: Path, mode: str, how: str, overwrite: Any
) -> None:
    """Under ``partitionOverwriteMode=dynamic``, Spark's own overwrite of a partitioned file
    table replaces only the partitions it writes (NULL is one); the temp table's overwrite
    must end with the same rows, also when the partitions come from ``rand()``, and also
    when the new rows are the table's own (read before Spark's own files are overwritten,
    which Spark refuses to read and overwrite at once)."""
    rows = "VALUES (1, 'a', 0), (2, 'b', 1), (3, 'c', 2), (4, 'd', NULL)"
    spark.sql("CREATE TEMPORARY TABLE t (id INT, s STRING, k INT) USING parquet PARTITIONED BY (k)")
    spark.sql(f"INSERT INTO t {rows}")
    reference = spark.sql(f"SELECT col1 AS id, col2 AS s, col3 AS k FROM ({rows})")
    reference.write.partitionBy("k").parquet(str(tmp_path / "reference"))
    spark.read.parquet(str(tmp_path / "reference")).createOrReplaceTempView("reference")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", mode)
    for query in (
        "SELECT 9, 'z', 1",
        "SELECT 8, 'y', CAST(NULL AS INT)",
        "SELECT 7, 'x', 5 WHERE FALSE",
        "SELECT id + 10, s, k FROM t WHERE k = 0",
        "SELECT id, 'r', CAST(floor(rand(7) * 3) AS INT) FROM range(6)",
    ):
        for name in ("reference", "t"):
            overwrite(spark, name, query)
        assert _rows(spark) == _rows(spark, "reference"), f"{how}, {mode}, after {query}"
    assert len(table_folders(workspace, spark)) == 1


def _listed_rows(spark: SparkSession, name: str = "t") -> int:
    (row,) = [r for r in spark.sql("SHOW TEMPORARY TABLES").collect() if r["name"] == name]
    return int(row["rows"])


def test_an_insert_led_by_with_or_from_is_counted_and_private(
    spark: SparkSession, workspace: Path
) -> None:
    """Spark runs ``WITH ... INSERT`` and Hive's ``FROM ... INSERT``; the gateway follows up
    as after any INSERT: the new files are private, and the rows are counted again, so SHOW
    TEMPORARY TABLES and a later DELETE's count are right."""
    spark.sql("CREATE TEMPORARY TABLE t (id BIGINT, s STRING) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    spark.sql("WITH s AS (SELECT 3 AS id, 'c' AS s) INSERT INTO t SELECT * FROM s")
    spark.sql("FROM (SELECT 4 AS id, 'd' AS s) AS src INSERT INTO TABLE t SELECT id, s")
    assert _rows(spark) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    assert _listed_rows(spark) == 4
    (folder,) = table_folders(workspace, spark)
    assert assert_private(folder) >= 4
    (deleted,) = spark.sql("DELETE FROM t WHERE id >= 3").collect()
    assert deleted[0] == 2
    assert _listed_rows(spark) == 2


def test_an_insert_led_by_with_or_from_is_checked_and_its_overwrite_atomic(
    spark: SparkSession, workspace: Path
) -> None:
    """``WITH ... INSERT`` and ``FROM ... INSERT`` are the same INSERT with the lead before
    its query: into a checked table their values are checked, an overwrite that fails
    leaves the table as it was (Spark's own overwrite of a parquet table deletes its files
    first), and one may read the table it overwrites, as a plain INSERT OVERWRITE may."""
    spark.sql("CREATE TEMPORARY TABLE c (id INT, s STRING) USING csv")
    spark.sql("INSERT INTO c VALUES (1, 'a')")
    spark.sql("WITH s AS (SELECT 2 AS id, 'x' AS s) INSERT INTO c SELECT * FROM s")
    spark.sql("FROM (SELECT 3 AS id, 'y' AS s) AS src INSERT INTO TABLE c (s, id) SELECT s, id")
    assert _rows(spark, "c") == [(1, "a"), (2, "x"), (3, "y")]
    with pytest.raises(PySparkException, match=r"not UTF-8, which csv cannot hold exactly"):
        spark.sql(
            "WITH s AS (SELECT 4 AS id, CAST(X'C328' AS STRING) AS s) INSERT INTO c SELECT * FROM s"
        ).collect()
    spark.sql("CREATE TEMPORARY TABLE p USING parquet AS SELECT * FROM c")
    folders = table_folders(workspace, spark)
    for name in ("c", "p"):
        with pytest.raises(PySparkException, match="refused on purpose"):
            spark.sql(
                "WITH s AS (SELECT CAST(id AS INT) AS id, IF(id = 2, "
                "raise_error('refused on purpose'), 'z') AS s FROM range(3)) "
                f"INSERT OVERWRITE {name} SELECT * FROM s"
            ).collect()
        assert _rows(spark, name) == [(1, "a"), (2, "x"), (3, "y")], name
    assert table_folders(workspace, spark) == folders
    spark.sql("DROP TABLE p")
    spark.sql("WITH s AS (SELECT id + 10 AS id, s FROM c) INSERT OVERWRITE c SELECT * FROM s")
    spark.sql("FROM c INSERT OVERWRITE c SELECT id, upper(s) WHERE id > 11")
    assert _rows(spark, "c") == [(12, "X"), (13, "Y")]
    assert _listed_rows(spark, "c") == 2
    assert len(table_folders(workspace, spark)) == 1


def test_queries_led_by_with_or_from_reach_spark_and_a_multi_insert_into_a_temp_table_is_refused(
    spark: SparkSession,
) -> None:
    """A CTE or a table named ``insert`` is a query's, not an INSERT; a Hive multi-insert
    naming a temp table among its targets is refused, its first target or not."""
    spark.sql("CREATE TEMPORARY TABLE t (id BIGINT, s STRING) USING parquet")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW other AS SELECT 1 AS id, 'o' AS s")
    assert spark.sql("WITH insert AS (SELECT 1 AS a) SELECT * FROM insert").collect()[0].a == 1
    assert spark.sql("FROM other SELECT 'insert' AS w").collect()[0].w == "insert"
    for statement in (
        "FROM other INSERT INTO t SELECT id, s INSERT INTO t SELECT id + 1, s",
        "FROM other INSERT INTO other SELECT id, s INSERT INTO t SELECT id, s",
    ):
        with pytest.raises(PySparkException, match=r"several target tables cannot write into"):
            spark.sql(statement).collect()
    assert _rows(spark) == []


def test_a_dynamic_overwrite_keeps_minus_zero_and_zero_apart_as_sparks_own_files_do(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Spark's files name a DOUBLE partition by its text, so ``K=-0.0`` and ``K=0.0`` are two
    partitions, and a dynamic overwrite of one leaves the other, although Spark's grouping
    takes the two values as one."""
    rows = "VALUES (1, -0.0D), (2, 0.0D), (3, 1.0D), (4, CAST('NaN' AS DOUBLE))"
    spark.sql("CREATE TEMPORARY TABLE t (id INT, K DOUBLE) USING parquet PARTITIONED BY (k)")
    spark.sql(f"INSERT INTO t {rows}")
    reference = spark.sql(f"SELECT col1 AS id, col2 AS K FROM ({rows})")
    reference.write.partitionBy("K").parquet(str(tmp_path / "reference"))
    spark.read.schema("id INT, K DOUBLE").parquet(str(tmp_path / "reference")).createOrReplaceTempView(
        "reference"
    )
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    for query in ("SELECT 9, 0.0D", "SELECT 8, -0.0D", "SELECT 7, CAST('NaN' AS DOUBLE)"):
        for name in ("reference", "t"):
            spark.sql(f"INSERT OVERWRITE {name} {query}")
        shown = [
            sorted((r[0], str(r[1])) for r in spark.table(name).collect())
            for name in ("t", "reference")
        ]
        assert shown[0] == shown[1], f"after {query}"
    assert sorted(str(r.K) for r in spark.table("t").collect()) == ["-0.0", "0.0", "1.0", "nan"]
