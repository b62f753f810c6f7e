"""Apache Drill's TestCTTAS and TemporaryTablesAutomaticDropTest, ported to Spark Connect.

Every case that applies to Spark names its Drill test in the docstring. Left
out, because Spark has no equivalent: testCreateWhenPersistentTableExists and
testCreatePersistentTableWhenTemporaryTableExists (Drill's persistent and temp
tables share one workspace namespace; Spark temp views shadow catalog tables
instead), the three DRILL-6863 leading-slash cases (Drill file paths), and
testAutomaticDropOfSeveralSessionTemporaryLocations (the workspace root
cannot change during a session). testAutomaticDropWhenDrillbitIsClosed is
the fault-tolerance issue's gateway-restart work.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from connect_plugin.server.gateway import Gateway
from tests.integration.support import (
    assert_private,
    new_session,
    session_folder,
    table_folders,
    temp_table_names,
)

EXISTS = "A table or view with given name [{}] already exists in schema [session]"


def test_syntax(spark: SparkSession) -> None:
    """Drill: TestCTTAS.testSyntax (plus TEMP, OR REPLACE, comments and odd spacing)."""
    spark.sql("CREATE TEMPORARY TABLE temporary_keyword AS SELECT 1 AS x")
    spark.sql("CREATE TEMPORARY TABLE session.temporary_keyword_with_wk AS SELECT 2 AS x")
    spark.sql("create temp table /* inline */ lower_temp\n  as -- trailing\n SELECT 3 AS x")
    spark.sql("CREATE OR REPLACE TEMP TABLE lower_temp AS SELECT 4 AS x")
    assert spark.sql("SELECT x FROM temporary_keyword").collect()[0].x == 1
    assert spark.sql("SELECT x FROM temporary_keyword_with_wk").collect()[0].x == 2
    assert spark.sql("SELECT x FROM lower_temp").collect()[0].x == 4
    assert sorted(temp_table_names(spark)) == [
        "lower_temp",
        "temporary_keyword",
        "temporary_keyword_with_wk",
    ]


@pytest.mark.parametrize(
    ("fmt", "options"),
    [
        ("parquet", ""),
        ("orc", ""),
        ("json", ""),
        ("csv", "OPTIONS (header 'true')"),
        ("text", ""),
    ],
)
def test_create_table_with_different_storage_formats(
    spark: SparkSession, workspace: Path, fmt: str, options: str
) -> None:
    """Drill: TestCTTAS.testCreateTableWithDifferentStorageFormats (csvh is csv with a header)."""
    name = f"temp_{fmt}"
    spark.sql(f"CREATE TEMPORARY TABLE {name} USING {fmt} {options} AS SELECT 'A' AS c1")
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {name}").collect()] == [("A",)]
    listed = spark.sql("SHOW TEMPORARY TABLES").collect()
    assert [(r["name"], r["format"], r["rows"]) for r in listed] == [(name, fmt, 1)]
    assert len(table_folders(workspace, spark)) == 1
    assert assert_private(session_folder(workspace, spark)) >= 1


def test_temporary_tables_case_insensitivity(spark: SparkSession) -> None:
    """Drill: TestCTTAS.testTemporaryTablesCaseInsensitivity."""
    spark.sql("CREATE TEMPORARY TABLE tEmP_InSeNSiTiVe AS SELECT 'A' AS c1")
    for spelling in ("tEmP_InSeNSiTiVe", "temp_insensitive", "TEMP_INSENSITIVE"):
        assert spark.sql(f"SELECT c1 FROM {spelling}").collect()[0].c1 == "A"
    assert spark.sql("DROP TABLE TEMP_INSENSITIVE").collect()[0].ok is True
    assert temp_table_names(spark) == []


def test_resolve_temporary_table_with_partial_schema(spark: SparkSession) -> None:
    """Drill: TestCTTAS.testResolveTemporaryTableWithPartialSchema (session.X created, X read)."""
    spark.sql("CREATE TEMPORARY TABLE session.partial_schema AS SELECT 'A' AS c1")
    assert spark.sql("SELECT * FROM partial_schema").collect()[0].c1 == "A"


def test_partition_by_with_temporary_tables(spark: SparkSession, workspace: Path) -> None:
    """Drill: TestCTTAS.testPartitionByWithTemporaryTables."""
    result = spark.sql(
        "CREATE TEMPORARY TABLE partitioned PARTITIONED BY (c1) AS "
        "SELECT * FROM (SELECT 'A' AS c1, 1 AS n UNION ALL SELECT 'B' AS c1, 2 AS n) t"
    ).collect()
    assert [tuple(r) for r in result] == [("partitioned", 2)]
    (folder,) = table_folders(workspace, spark)
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["c1=A", "c1=B"]
    assert_private(session_folder(workspace, spark))
    rows = spark.sql("SELECT n, c1 FROM partitioned ORDER BY n").collect()
    assert [tuple(r) for r in rows] == [(1, "A"), (2, "B")]


def test_creation_outside_of_default_temporary_workspace(
    spark: SparkSession, workspace: Path
) -> None:
    """Drill: TestCTTAS.testCreationOutsideOfDefaultTemporaryWorkspace."""
    with pytest.raises(AnalysisException) as raised:
        spark.sql("CREATE TEMPORARY TABLE tmp2.outside AS SELECT 1 AS x")
    assert (
        "Temporary tables are not allowed to be created outside of default temporary "
        "workspace [session]" in str(raised.value)
    )
    assert table_folders(workspace, spark) == []
    assert temp_table_names(spark) == []


@pytest.mark.parametrize(
    ("first", "second", "reported"),
    [
        ("exists_plain", "exists_plain", "exists_plain"),
        ("exists_case_insensitive", "EXISTS_CASE_INSENSITIVE", "EXISTS_CASE_INSENSITIVE"),
        ("session.exists_with_schema", "session.exists_with_schema", "exists_with_schema"),
    ],
    ids=["WithoutSchema", "CaseInsensitive", "WithSchema"],
)
def test_create_when_temporary_table_exists(
    spark: SparkSession, workspace: Path, first: str, second: str, reported: str
) -> None:
    """Drill: TestCTTAS.testCreateWhenTemporaryTableExists{WithoutSchema,CaseInsensitive,WithSchema}."""
    spark.sql(f"CREATE TEMPORARY TABLE {first} AS SELECT 'A' AS c1")
    with pytest.raises(AnalysisException) as raised:
        spark.sql(f"CREATE TEMPORARY TABLE {second} AS SELECT 'B' AS c1")
    assert EXISTS.format(reported) in str(raised.value)
    assert len(table_folders(workspace, spark)) == 1
    assert spark.sql(f"SELECT c1 FROM {reported}").collect()[0].c1 == "A"


def test_create_when_view_exists(spark: SparkSession, workspace: Path) -> None:
    """Drill: TestCTTAS.testCreateWhenViewExists (a session temp view holds the name)."""
    spark.sql("CREATE TEMP VIEW existing_view AS SELECT 'view' AS c1")
    with pytest.raises(AnalysisException) as raised:
        spark.sql("CREATE TEMPORARY TABLE existing_view AS SELECT 'table' AS c1")
    assert EXISTS.format("existing_view") in str(raised.value)
    assert table_folders(workspace, spark) == []
    assert spark.sql("SELECT c1 FROM existing_view").collect()[0].c1 == "view"


def test_create_view_when_temporary_table_exists(spark: SparkSession) -> None:
    """Drill: TestCTTAS.testCreateViewWhenTemporaryTableExists (OR REPLACE included: it would orphan the files)."""
    spark.sql("CREATE TEMPORARY TABLE view_target AS SELECT 'table' AS c1")
    for statement in ("CREATE TEMP VIEW", "CREATE OR REPLACE TEMPORARY VIEW"):
        with pytest.raises(AnalysisException, match=r"\[view_target\] is a temporary table"):
            spark.sql(f"{statement} view_target AS SELECT 'view' AS c1")
    with pytest.raises(AnalysisException, match=r"\[VIEW_TARGET\] is a temporary table"):
        spark.range(1).createOrReplaceTempView("VIEW_TARGET")
    assert spark.sql("SELECT c1 FROM view_target").collect()[0].c1 == "table"


def test_select_with_join_on_temporary_tables(spark: SparkSession) -> None:
    """Drill: TestCTTAS.testSelectWithJoinOnTemporaryTables."""
    spark.sql("CREATE TEMPORARY TABLE t_left AS SELECT 'A' AS c1, 'B' AS c2")
    spark.sql("CREATE TEMPORARY TABLE t_right AS SELECT 'A' AS c1, 'C' AS c2")
    rows = spark.sql(
        "SELECT t1.c2 AS col1, t2.c2 AS col2 FROM t_left t1 JOIN t_right t2 ON t1.c1 = t2.c1"
    ).collect()
    assert [tuple(r) for r in rows] == [("B", "C")]


@pytest.fixture
def permanent(spark: SparkSession) -> Iterator[str]:
    name = f"perm_{uuid.uuid4().hex[:8]}"
    yield name
    spark.sql(f"DROP TABLE IF EXISTS default.{name}")
    spark.sql(f"DROP VIEW IF EXISTS default.{name}")


def test_temporary_and_persistent_tables_priority(spark: SparkSession, permanent: str) -> None:
    """Drill: TestCTTAS.testTemporaryAndPersistentTablesPriority."""
    spark.sql(f"CREATE TABLE default.{permanent} USING parquet AS SELECT 'persistent_table' AS c1")
    spark.sql(f"CREATE TEMPORARY TABLE {permanent} AS SELECT 'temporary_table' AS c1")
    assert spark.sql(f"SELECT c1 FROM {permanent}").collect()[0].c1 == "temporary_table"
    assert spark.sql(f"SELECT c1 FROM default.{permanent}").collect()[0].c1 == "persistent_table"
    assert spark.sql(f"DROP TABLE {permanent}").collect()[0].summary == (
        f"Temporary table [{permanent}] dropped"
    )
    assert spark.sql(f"SELECT c1 FROM {permanent}").collect()[0].c1 == "persistent_table"


def test_temporary_table_and_view_priority(spark: SparkSession, permanent: str) -> None:
    """Drill: TestCTTAS.testTemporaryTableAndViewPriority."""
    spark.sql(f"CREATE VIEW default.{permanent} AS SELECT 'view' AS c1")
    spark.sql(f"CREATE TEMPORARY TABLE {permanent} AS SELECT 'temporary_table' AS c1")
    assert spark.sql(f"SELECT c1 FROM {permanent}").collect()[0].c1 == "temporary_table"
    assert spark.sql(f"SELECT c1 FROM default.{permanent}").collect()[0].c1 == "view"
    spark.sql(f"DROP TABLE {permanent}")
    assert spark.sql(f"SELECT c1 FROM {permanent}").collect()[0].c1 == "view"


def test_temporary_tables_in_view_definitions(spark: SparkSession, permanent: str) -> None:
    """Drill: TestCTTAS.testTemporaryTablesInViewDefinitions."""
    spark.sql("CREATE TEMPORARY TABLE in_view AS SELECT 'A' AS c1")
    with pytest.raises(AnalysisException) as raised:
        spark.sql(f"CREATE VIEW default.{permanent} AS SELECT * FROM in_view")
    assert (
        "A reference to temporary table [in_view] was made in a context where temporary "
        "table references are not allowed" in str(raised.value)
    )
    spark.sql("CREATE TEMP VIEW over_temp AS SELECT * FROM in_view")
    assert spark.sql("SELECT c1 FROM over_temp").collect()[0].c1 == "A"


def test_temporary_tables_in_view_expansion_logic(spark: SparkSession, permanent: str) -> None:
    """Drill: TestCTTAS.testTemporaryTablesInViewExpansionLogic."""
    view = f"{permanent}_v"
    spark.sql(f"CREATE TABLE default.{permanent} USING parquet AS SELECT 'TABLE' AS c1")
    spark.sql(f"CREATE VIEW default.{view} AS SELECT * FROM default.{permanent}")
    try:
        assert spark.sql(f"SELECT c1 FROM default.{view}").collect()[0].c1 == "TABLE"
        spark.sql(f"DROP TABLE default.{permanent}")
        spark.sql(f"CREATE TEMPORARY TABLE {permanent} AS SELECT 'TEMP' AS c1")
        with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
            spark.sql(f"SELECT c1 FROM default.{view}").collect()
    finally:
        spark.sql(f"DROP VIEW IF EXISTS default.{view}")


def test_create_if_not_exists_when_table_with_same_name_already_exists(
    spark: SparkSession, workspace: Path
) -> None:
    """Drill: TestCTTAS.testCreateTemporaryTableIfNotExistsWhenTableWithSameNameAlreadyExists."""
    spark.sql("CREATE TEMPORARY TABLE session.if_not_exists AS SELECT 'first' AS c1")
    result = spark.sql(
        "CREATE TEMPORARY TABLE IF NOT EXISTS if_not_exists AS SELECT 'second' AS c1"
    ).collect()
    assert [tuple(r) for r in result] == [(False, EXISTS.format("if_not_exists"))]
    assert spark.sql("SELECT c1 FROM if_not_exists").collect()[0].c1 == "first"
    assert len(table_folders(workspace, spark)) == 1
    assert spark.sql("DROP TABLE IF EXISTS session.if_not_exists").collect()[0].ok is True


def test_create_if_not_exists_when_view_with_same_name_already_exists(
    spark: SparkSession, workspace: Path
) -> None:
    """Drill: TestCTTAS.testCreateTemporaryTableIfNotExistsWhenViewWithSameNameAlreadyExists."""
    spark.sql("CREATE TEMP VIEW if_not_exists_view AS SELECT 'view' AS c1")
    result = spark.sql(
        "CREATE TEMPORARY TABLE IF NOT EXISTS if_not_exists_view AS SELECT 'table' AS c1"
    ).collect()
    assert [tuple(r) for r in result] == [(False, EXISTS.format("if_not_exists_view"))]
    assert spark.sql("SELECT c1 FROM if_not_exists_view").collect()[0].c1 == "view"
    assert table_folders(workspace, spark) == []
    spark.sql("DROP VIEW IF EXISTS if_not_exists_view")


def test_create_if_not_exists_when_table_with_same_name_does_not_exist(
    spark: SparkSession,
) -> None:
    """Drill: TestCTTAS.testCreateTemporaryTableIfNotExistsWhenTableWithSameNameDoesNotExist."""
    result = spark.sql("CREATE TEMPORARY TABLE IF NOT EXISTS session.fresh AS SELECT 1 AS x").collect()
    assert [tuple(r) for r in result] == [("fresh", 1)]
    assert temp_table_names(spark) == ["fresh"]
    assert spark.sql("DROP TABLE IF EXISTS session.fresh").collect()[0].ok is True
    assert temp_table_names(spark) == []


@pytest.mark.parametrize("qualifier", ["", "session."], ids=["WithoutSchema", "WithSchema"])
def test_manual_drop(spark: SparkSession, workspace: Path, qualifier: str) -> None:
    """Drill: TestCTTAS.testManualDropWithoutSchema and testManualDropWithSchema."""
    spark.sql(f"CREATE TEMPORARY TABLE {qualifier}manual_drop AS SELECT 'A' AS c1")
    (folder,) = table_folders(workspace, spark)
    result = spark.sql(f"DROP TABLE {qualifier}manual_drop").collect()
    assert [tuple(r) for r in result] == [(True, "Temporary table [manual_drop] dropped")]
    assert not folder.exists()
    assert temp_table_names(spark) == []
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql("SELECT * FROM manual_drop").collect()


def test_drop_temporary_table_as_view_without_exception(spark: SparkSession) -> None:
    """Drill: TestCTTAS.testDropTemporaryTableAsViewWithoutException."""
    spark.sql("CREATE TEMPORARY TABLE not_a_view AS SELECT 'A' AS c1")
    result = spark.sql("DROP VIEW IF EXISTS session.not_a_view").collect()
    assert [tuple(r) for r in result] == [(False, "View [session.not_a_view] not found in schema [session].")]
    assert spark.sql("SELECT c1 FROM not_a_view").collect()[0].c1 == "A"


def test_drop_temporary_table_as_view_with_exception(spark: SparkSession) -> None:
    """Drill: TestCTTAS.testDropTemporaryTableAsViewWithException."""
    spark.sql("CREATE TEMPORARY TABLE not_a_view AS SELECT 'A' AS c1")
    with pytest.raises(AnalysisException, match=r"\[not_a_view\] is not a VIEW"):
        spark.sql("DROP VIEW not_a_view")
    assert spark.sql("SELECT c1 FROM not_a_view").collect()[0].c1 == "A"


def test_join_temporary_with_persistent_table(spark: SparkSession, permanent: str) -> None:
    """Drill: TestCTTAS.testJoinTemporaryWithPersistentTable (DRILL-6612)."""
    spark.sql(f"CREATE TABLE default.{permanent} USING parquet AS SELECT '12312' AS c1")
    spark.sql("CREATE TEMPORARY TABLE temp_tab AS SELECT '12312' AS c2")
    rows = spark.sql(
        f"SELECT * FROM default.{permanent} a JOIN temp_tab b ON a.c1 = b.c2"
    ).collect()
    assert [tuple(r) for r in rows] == [("12312", "12312")]


def test_temporary_table_in_sub_query(spark: SparkSession) -> None:
    """Drill: TestCTTAS.testTemporaryTableInSubQuery (DRILL-7050), with a parenthesized AS (query)."""
    spark.sql(
        "CREATE TEMPORARY TABLE source AS (SELECT 1 AS id UNION ALL SELECT 2 AS id)"
    )
    rows = spark.sql(
        "SELECT t1.id, (SELECT count(t2.id) FROM source t2 WHERE t2.id = t1.id) AS c "
        "FROM source t1 ORDER BY t1.id"
    ).collect()
    assert [tuple(r) for r in rows] == [(1, 1), (2, 1)]


def test_automatic_drop_when_client_is_closed(
    gateway: Gateway, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Drill: TemporaryTablesAutomaticDropTest.testAutomaticDropWhenClientIsClosed."""
    caplog.set_level(logging.INFO, logger="connect_plugin")
    session = new_session(gateway.address)
    session.sql("CREATE TEMPORARY TABLE session.automatic_drop AS SELECT 'A' AS c1")
    folder = session_folder(workspace, session)
    assert len(table_folders(workspace, session)) == 1
    assert assert_private(folder) >= 1
    session.stop()
    deadline = time.monotonic() + 10
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not folder.exists()
    messages = [r.getMessage() for r in caplog.records]
    assert "Temporary table [automatic_drop] is being created." in messages
    assert "Temporary table [automatic_drop] is being dropped." in messages
    assert f"Deleted session temporary location [{folder}]" in messages
    other = new_session(gateway.address)
    try:
        with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
            other.sql("SELECT * FROM automatic_drop").collect()
    finally:
        other.stop()


def test_statements_whose_rows_the_gateway_knows_come_back_as_local_relations(
    spark: SparkSession,
) -> None:
    """CREATE, SHOW TEMPORARY TABLES, DROP and a change: each answered with its rows as
    Spark answers a command; a statement Spark runs is answered by Spark."""
    answers = {
        statement: spark.sql(statement)
        for statement in (
            "CREATE TEMPORARY TABLE t AS SELECT id FROM range(4)",
            "SHOW TEMPORARY TABLES",
            "UPDATE t SET id = id + 1 WHERE id > 1",
            "DROP TABLE t",
            "SELECT 1 AS one",
        )
    }
    kinds = {s: df._plan._plan.WhichOneof("rel_type") for s, df in answers.items()}
    assert kinds == {
        "CREATE TEMPORARY TABLE t AS SELECT id FROM range(4)": "local_relation",
        "SHOW TEMPORARY TABLES": "local_relation",
        "UPDATE t SET id = id + 1 WHERE id > 1": "local_relation",
        "DROP TABLE t": "local_relation",
        "SELECT 1 AS one": "sql",
    }
    assert [tuple(r) for r in answers["CREATE TEMPORARY TABLE t AS SELECT id FROM range(4)"].collect()] == [
        ("t", 4)
    ]
    (listed,) = answers["SHOW TEMPORARY TABLES"].collect()
    assert (listed["name"], listed["format"], listed["rows"]) == ("t", "parquet", 4)
    assert listed["created"].year >= 2026
    assert [tuple(r) for r in answers["DROP TABLE t"].collect()] == [
        (True, "Temporary table [t] dropped")
    ]
