"""Temporary tables end to end: formats, rules, atomicity, isolation, INSERT, progress, API."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException
from pyspark.errors.exceptions.connect import SparkConnectGrpcException, SparkRuntimeException
from pyspark.sql import SparkSession
from pyspark.sql.connect.dataframe import DataFrame

import connect_plugin
from connect_plugin import proto
from connect_plugin.client.plan import PluginRelation
from connect_plugin.server.gateway import Gateway
from tests.integration.support import (
    assert_private,
    new_session,
    session_folder,
    table_folders,
    temp_table_names,
)

FORMATS = ("parquet", "orc", "json", "csv", "text")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_partitioned_keeps_types_and_rows(
    spark: SparkSession, workspace: Path, fmt: str
) -> None:
    value = "CAST(id AS STRING) AS v" if fmt == "text" else "id AS v, id / 4 AS d"
    result = spark.sql(
        f"CREATE TEMPORARY TABLE part_{fmt} USING {fmt} PARTITIONED BY (k) AS "
        f"SELECT {value}, CAST(id % 3 AS INT) AS k FROM range(30)"
    ).collect()
    assert [tuple(r) for r in result] == [(f"part_{fmt}", 30)]
    table = spark.table(f"part_{fmt}")
    expected_types = ["string", "int"] if fmt == "text" else ["bigint", "double", "int"]
    assert [t for _, t in table.dtypes] == expected_types
    assert table.columns[-1] == "k"
    assert table.groupBy("k").count().orderBy("k").collect() == [(0, 10), (1, 10), (2, 10)]
    (folder,) = table_folders(workspace, spark)
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["k=0", "k=1", "k=2"]
    assert assert_private(session_folder(workspace, spark)) >= 3


@pytest.mark.parametrize("fmt", FORMATS)
def test_empty_result_gives_an_empty_table_with_the_schema(spark: SparkSession, fmt: str) -> None:
    columns = "CAST(id AS STRING) AS s" if fmt == "text" else "id, CAST(id AS STRING) AS s"
    result = spark.sql(
        f"CREATE TEMP TABLE empty_{fmt} USING {fmt} AS SELECT {columns} FROM range(5) WHERE id > 9"
    ).collect()
    assert [tuple(r) for r in result] == [(f"empty_{fmt}", 0)]
    table = spark.table(f"empty_{fmt}")
    assert table.count() == 0
    assert table.dtypes == ([("s", "string")] if fmt == "text" else [("id", "bigint"), ("s", "string")])


def test_column_list_renames_and_options_reach_the_writer(spark: SparkSession, workspace: Path) -> None:
    spark.sql(
        "CREATE TEMPORARY TABLE renamed (a, `b c`) USING csv OPTIONS ('header' = 'true', sep '|') "
        "AS SELECT 1 AS x, 'y' AS y"
    )
    assert spark.table("renamed").columns == ["a", "b c"]
    (folder,) = table_folders(workspace, spark)
    (data,) = [p for p in folder.iterdir() if p.name.startswith("part-") and p.stat().st_size]
    assert data.read_text().splitlines() == ["a|b c", "1|y"]


def test_session_default_format_then_server_default(spark: SparkSession) -> None:
    spark.conf.set("connect_plugin.temp_table.format", "json")
    spark.sql("CREATE TEMP TABLE by_session AS SELECT 1 AS x")
    spark.sql("CREATE TEMP TABLE by_statement USING orc AS SELECT 1 AS x")
    spark.conf.unset("connect_plugin.temp_table.format")
    spark.sql("CREATE TEMP TABLE by_server AS SELECT 1 AS x")
    formats = {r["name"]: r["format"] for r in spark.sql("SHOW TEMPORARY TABLES").collect()}
    assert formats == {"by_session": "json", "by_statement": "orc", "by_server": "parquet"}


def test_show_temporary_tables_reports_rows_bytes_and_creation(spark: SparkSession) -> None:
    before = datetime.datetime.now()
    spark.sql("CREATE TEMP TABLE listed AS SELECT id FROM range(1234)")
    (row,) = spark.sql("SHOW TEMPORARY TABLES").collect()
    assert (row["name"], row["format"], row["rows"]) == ("listed", "parquet", 1234)
    assert row["bytes"] > 1000
    assert before - datetime.timedelta(minutes=1) <= row["created"] <= datetime.datetime.now()


@pytest.mark.parametrize(
    ("statement", "error", "message"),
    [
        ("CREATE TEMP TABLE bad_cols (a, b) AS SELECT 1 AS x", AnalysisException,
         r"column list names 2 columns but the query returns 1"),
        ("CREATE TEMP TABLE bad_part PARTITIONED BY (nope) AS SELECT 1 AS x", AnalysisException,
         r"partition column \[nope\] is not in the select list"),
        ("CREATE TEMP TABLE bad_fmt USING avro2 AS SELECT 1 AS x", AnalysisException,
         r"unknown format \[avro2\].*parquet, orc, json, csv, text"),
        ("CREATE TEMP TABLE bad_text USING text AS SELECT 1 AS x", AnalysisException,
         r"format text needs exactly one string column"),
        ("CREATE TEMP TABLE ` ` AS SELECT 1 AS x", AnalysisException,
         r"\[ \] is not a valid temporary table name"),
        ("CREATE TEMP TABLE a.b.c AS SELECT 1 AS x", AnalysisException,
         r"\[a.b.c\] is not a valid temporary table name"),
        ("CREATE TEMP TABLE bad_query AS SELECT nope FROM range(3)", AnalysisException,
         r"Temporary table \[bad_query\] was not created: .*UNRESOLVED_COLUMN"),
        ("CREATE TEMP TABLE mid_job AS SELECT IF(id = 70000, raise_error('boom at 70000'), id) "
         "AS id FROM range(100000)", SparkRuntimeException,
         r"Temporary table \[mid_job\] was not created: .*boom at 70000"),
    ],
    ids=["column-count", "partition", "format", "text", "blank-name", "three-parts", "analysis",
         "mid-job"],
)
def test_errors_name_the_table_and_leave_nothing_behind(
    spark: SparkSession, workspace: Path, statement: str, error: type[Exception], message: str
) -> None:
    spark.sql("CREATE TEMP TABLE keeper AS SELECT 1 AS x")
    with pytest.raises(error, match=message):
        spark.sql(statement)
    assert len(table_folders(workspace, spark)) == 1
    assert temp_table_names(spark) == ["keeper"]
    views = [r.viewName for r in spark.sql("SHOW VIEWS").collect() if r.isTemporary]
    assert views == ["keeper"]


def test_unqualified_name_reaches_the_temp_table_qualified_the_permanent(
    spark: SparkSession, unique_name: str
) -> None:
    spark.sql(f"CREATE TABLE default.{unique_name} USING parquet AS SELECT 'permanent' AS c")
    try:
        spark.sql(f"CREATE TEMP TABLE {unique_name} AS SELECT 'temporary' AS c")
        assert spark.table(unique_name).collect()[0].c == "temporary"
        assert spark.table(f"default.{unique_name}").collect()[0].c == "permanent"
        assert spark.table(f"spark_catalog.default.{unique_name}").collect()[0].c == "permanent"
    finally:
        spark.sql(f"DROP TABLE IF EXISTS default.{unique_name}")


def test_drop_of_a_non_temp_table_goes_to_spark_unchanged(spark: SparkSession, unique_name: str) -> None:
    spark.sql(f"CREATE TABLE default.{unique_name} USING parquet AS SELECT 1 AS c")
    spark.sql(f"DROP TABLE {unique_name}")
    assert not spark.catalog.tableExists(f"default.{unique_name}")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"DROP TABLE {unique_name}")


@pytest.mark.parametrize("how", ["INSERT INTO ins SELECT", "INSERT INTO TABLE ins SELECT",
                                 "INSERT OVERWRITE ins SELECT", "insertInto"])
def test_insert_into_temp_table_keeps_files_private(
    spark: SparkSession, workspace: Path, how: str
) -> None:
    spark.sql("CREATE TEMP TABLE ins PARTITIONED BY (k) AS SELECT id, id % 2 AS k FROM range(4)")
    if how == "insertInto":
        spark.range(10, 12).selectExpr("id", "id % 2 AS k").write.insertInto("ins")
        expected = 6
    else:
        spark.sql(f"{how} id, id % 2 AS k FROM range(10, 12)")
        expected = 2 if "OVERWRITE" in how else 6
    assert spark.table("ins").count() == expected
    assert assert_private(session_folder(workspace, spark)) >= 2


def test_another_session_cannot_see_the_table(spark: SparkSession, gateway: Gateway) -> None:
    spark.sql("CREATE TEMP TABLE private_one AS SELECT 1 AS x")
    other = new_session(gateway.address)
    try:
        with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
            other.sql("SELECT * FROM private_one").collect()
        assert [r.name for r in other.sql("SHOW TEMPORARY TABLES").collect()] == []
        with pytest.raises(AnalysisException, match="TEMP_TABLE_NOT_FOUND"):
            connect_plugin.temp_table(other, "private_one").collect()
        assert other.sql("DROP TABLE IF EXISTS private_one").collect() == []
    finally:
        other.stop()
    assert spark.table("private_one").count() == 1


class _ForgedDrop(PluginRelation):
    def __init__(self, session_id: str) -> None:
        super().__init__()
        self._session_id = session_id

    def to_plugin_message(self, client: object) -> proto.DropTempTable:
        return proto.DropTempTable(session_id=self._session_id, name="victim")


def test_forged_session_id_is_permission_denied(spark: SparkSession, gateway: Gateway) -> None:
    spark.sql("CREATE TEMP TABLE victim AS SELECT 1 AS x")
    attacker = new_session(gateway.address)
    try:
        forged = DataFrame(_ForgedDrop(spark.client._session_id), attacker)
        with pytest.raises(SparkConnectGrpcException, match="SESSION_MISMATCH"):
            forged.collect()
    finally:
        attacker.stop()
    assert spark.table("victim").count() == 1


def test_files_are_unreadable_for_other_users(spark: SparkSession, workspace: Path) -> None:
    spark.sql("CREATE TEMP TABLE modes AS SELECT id FROM range(10)")
    folder = session_folder(workspace, spark)
    files = assert_private(folder)
    assert files >= 2
    assert folder.stat().st_mode & 0o077 == 0


def test_long_cttas_reports_progress_to_the_client(spark: SparkSession) -> None:
    seen: list[dict[str, object]] = []
    spark.registerProgressHandler(lambda **event: seen.append(event))
    spark.sql(
        "CREATE TEMP TABLE slow AS SELECT id, sha2(CAST(id AS STRING), 512) AS h "
        "FROM range(0, 3000000, 1, 4)"
    ).collect()
    during = [e for e in seen if e["stages"] and not e["done"]]
    assert during, f"no progress while writing, got {seen}"
    assert spark.table("slow").count() == 3_000_000


def test_python_api_create_read_list_drop(spark: SparkSession, workspace: Path) -> None:
    df = spark.range(100).selectExpr("id", "id % 4 AS k")
    row = connect_plugin.create_temp_table(df, "api_t", format="json", partition_by=["k"])
    assert tuple(row) == ("api_t", 100)
    assert connect_plugin.temp_table(spark, "API_T").where("k = 1").count() == 25
    assert connect_plugin.temp_table(spark, "api_t").columns == ["id", "k"]
    listed = connect_plugin.temp_tables(spark).collect()
    assert [(r["name"], r["format"], r["rows"]) for r in listed] == [("api_t", "json", 100)]
    again = connect_plugin.create_temp_table(df, "api_t", if_not_exists=True)
    assert tuple(again) == (False, "A table or view with given name [api_t] already exists in schema [session]")
    replaced = connect_plugin.create_temp_table(
        spark.range(3), "session.api_t", replace=True, column_names=["n"]
    )
    assert tuple(replaced) == ("api_t", 3)
    assert connect_plugin.temp_table(spark, "api_t").columns == ["n"]
    assert len(table_folders(workspace, spark)) == 1
    assert tuple(connect_plugin.drop_temp_table(spark, "api_t")) == (
        True,
        "Temporary table [api_t] dropped",
    )
    assert tuple(connect_plugin.drop_temp_table(spark, "api_t", if_exists=True)) == (
        False,
        "Temporary table [api_t] not found",
    )
    with pytest.raises(AnalysisException, match="TEMP_TABLE_NOT_FOUND"):
        connect_plugin.drop_temp_table(spark, "api_t")
    assert table_folders(workspace, spark) == []


def test_python_api_results_can_be_analysed_without_side_effects(spark: SparkSession) -> None:
    frame = connect_plugin.temp_tables(spark)
    assert frame.columns == ["name", "format", "rows", "bytes", "created"]
    assert frame.collect() == []


def test_readme_python_example_runs(spark: SparkSession, workspace: Path) -> None:
    readme = Path(__file__).resolve().parents[3] / "docs" / "temp-tables.md"
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    example = next(block for block in blocks if "create_temp_table" in block)
    exec(compile(example, str(readme), "exec"), {"spark": spark})
    assert temp_table_names(spark) == []
    assert table_folders(workspace, spark) == []
