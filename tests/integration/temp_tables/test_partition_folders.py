"""Every version of a partitioned temp table takes PARTITION inserts and writes partition folders.

Spark sees a file table's partition columns only in the names of folders
holding data files: a version written with no rows (a declared table, a CTAS
of none, a DELETE that empties it) had none, so ``INSERT ... PARTITION``
failed with ``PARTITIONS_NOT_FOUND`` and a plain INSERT wrote its files at
the table folder's root, after which PARTITION inserts kept failing (issue
45). A table left that way by an older gateway reads right and is laid out
by its next write.
"""

from __future__ import annotations

import datetime
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from connect_plugin.server.gateway import Gateway
from tests.integration.support import Upstream, table_folders
from tests.integration.temp_tables.roundtrip_check import session_of

FORMATS = ("parquet", "orc", "json", "csv")
COLUMNS = "a INT, v DOUBLE, b INT"
"""Columns whose values every format holds, so that no INSERT needs the gateway's check
(a PARTITION insert into a table whose values are checked is refused, docs/temp-tables.md)."""
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def _declared(spark: SparkSession, fmt: str) -> None:
    spark.sql(f"CREATE TEMPORARY TABLE t ({COLUMNS}) USING {fmt} PARTITIONED BY (b)")


def _empty_select(spark: SparkSession, fmt: str) -> None:
    spark.sql(
        f"CREATE TEMPORARY TABLE t USING {fmt} PARTITIONED BY (b) AS "
        "SELECT 1 AS a, 1.5D AS v, 2 AS b WHERE false"
    )


def _emptied(spark: SparkSession, fmt: str) -> None:
    spark.sql(
        f"CREATE TEMPORARY TABLE t USING {fmt} PARTITIONED BY (b) AS "
        "SELECT * FROM VALUES (1, 1.5D, 2), (2, 2.5D, NULL) AS s(a, v, b)"
    )
    spark.sql("DELETE FROM t WHERE a > 0")


EMPTY_VERSIONS: dict[str, Callable[[SparkSession, str], None]] = {
    "declared": _declared,
    "CTAS of no rows": _empty_select,
    "emptied by DELETE": _emptied,
}


def _rows(spark: SparkSession) -> list[tuple[object, ...]]:
    return sorted((tuple(r) for r in spark.table("t").collect()), key=repr)


def _layout(folder: Path) -> tuple[list[str], list[str]]:
    """The partition folders under ``folder`` and the data files at its root."""
    folders = sorted(p.name for p in folder.iterdir() if p.is_dir())
    files = sorted(
        p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith(("_", "."))
    )
    return folders, files


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("empty", EMPTY_VERSIONS, ids=list(EMPTY_VERSIONS))
def test_partition_inserts_and_overwrites_work_on_an_empty_version(
    spark: SparkSession, workspace: Path, fmt: str, empty: str
) -> None:
    EMPTY_VERSIONS[empty](spark, fmt)
    assert _rows(spark) == []
    spark.sql("INSERT INTO t PARTITION (b = 1) VALUES (1, 10.5)")
    spark.sql("INSERT INTO TABLE t PARTITION (b) VALUES (2, 20.5, 2)")
    spark.sql("INSERT OVERWRITE t PARTITION (b = 1) VALUES (3, 30.5)")
    spark.sql("INSERT INTO t VALUES (4, 40.5, 4)")
    spark.createDataFrame([(5, 50.5, None)], COLUMNS).write.insertInto("t")
    assert _rows(spark) == [(2, 20.5, 2), (3, 30.5, 1), (4, 40.5, 4), (5, 50.5, None)]
    (folder,) = table_folders(workspace, spark)
    assert _layout(folder) == (["b=1", "b=2", "b=4", f"b={NULL_PARTITION}"], [])
    (listed,) = [r for r in spark.sql("SHOW TEMPORARY TABLES").collect() if r["name"] == "t"]
    assert listed["rows"] == 4


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_plain_insert_into_an_empty_version_writes_partition_folders(
    spark: SparkSession, workspace: Path, fmt: str
) -> None:
    spark.sql(
        f"CREATE TEMPORARY TABLE t (a INT, v DOUBLE, b INT, c DATE) USING {fmt} "
        "PARTITIONED BY (c, b)"
    )
    spark.sql("INSERT INTO t VALUES (1, 1.5, DATE'2024-01-02', 7)")
    spark.sql("INSERT INTO t PARTITION (c = DATE'2024-01-02', b = 8) VALUES (2, 2.5)")
    (folder,) = table_folders(workspace, spark)
    assert _layout(folder) == (["c=2024-01-02", f"c={NULL_PARTITION}"], [])
    assert _layout(folder / "c=2024-01-02") == (["b=7", "b=8"], [])
    day = datetime.date(2024, 1, 2)
    assert _rows(spark) == [(1, 1.5, day, 7), (2, 2.5, day, 8)]


def test_partition_columns_named_with_characters_a_folder_name_escapes(
    spark: SparkSession, workspace: Path
) -> None:
    """The NULL partition's folder escapes the column's name as Spark reads it back: ``_x``
    names a hidden file, ``a/b`` and ``k=v`` would be read as other folders."""
    spark.sql(
        "CREATE TEMPORARY TABLE t (a INT, `_p` INT, `a/b=c %` INT, `Ü q` INT) USING parquet "
        "PARTITIONED BY (`_p`, `a/b=c %`, `Ü q`)"
    )
    spark.sql("INSERT INTO t PARTITION (`_p` = 1, `a/b=c %` = 3, `Ü q` = 2) VALUES (1)")
    assert _rows(spark) == [(1, 1, 3, 2)]


def test_a_partition_column_whose_folders_spark_would_hide_is_refused(
    spark: SparkSession, workspace: Path
) -> None:
    """Spark writes a partition column ``.p`` into folders ``.p=...``, which its reader takes
    for hidden ones: the rows were written and never read back."""
    with pytest.raises(PySparkException, match=r"partition column \[.p\] cannot be held: its "
                       r"folders' names would start with a dot"):
        spark.sql("CREATE TEMPORARY TABLE t USING parquet PARTITIONED BY (`.p`) AS "
                  "SELECT 1 AS a, 2 AS `.p`")
    assert table_folders(workspace, spark) == []


def test_a_table_an_older_gateway_left_with_root_files_reads_right_and_is_laid_out(
    spark: SparkSession, gateway: Gateway, upstream: Upstream, workspace: Path
) -> None:
    """The view and files an older gateway made: a view over the folder of an empty version,
    and a plain INSERT through it, which wrote its files at the root."""
    spark.sql(f"CREATE TEMPORARY TABLE t ({COLUMNS}) USING parquet PARTITIONED BY (b)")
    table = session_of(gateway, spark).tables["t"]
    shutil.rmtree(table.location / f"b={NULL_PARTITION}", ignore_errors=True)
    older = SparkSession.builder.remote(
        f"{upstream.address}/;session_id={spark.client._session_id}"
    ).create()
    try:
        (
            older.read.format("parquet")
            .schema(COLUMNS)
            .options(**table.options)
            .load(str(table.location))
            .createOrReplaceTempView("t")
        )
        older.sql("INSERT INTO t VALUES (1, 1.5, 1), (2, 2.5, NULL)")
    finally:
        older.client.close()
    folders, root_files = _layout(table.location)
    assert folders == []
    assert root_files
    assert _rows(spark) == [(1, 1.5, 1), (2, 2.5, None)]
    spark.sql("INSERT INTO t PARTITION (b = 3) VALUES (3, 3.5)")
    assert _rows(spark) == [(1, 1.5, 1), (2, 2.5, None), (3, 3.5, 3)]
    (folder,) = table_folders(workspace, spark)
    assert _layout(folder) == (["b=1", "b=3", f"b={NULL_PARTITION}"], [])
