"""Scans from SQL: ``CREATE TEMPORARY VIEW name USING scan OPTIONS (...)`` through the gateway.

With the stock pyspark client's ``spark.sql`` only (no ``connect_plugin``
import on the client side), and with the Scala client bundled in the
pyspark wheel, which knows nothing of the plugin at all.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pyspark
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from connect_plugin.server.gateway import Gateway
from tests.integration.support import new_session
from tests.unit.scanning.scan_checks import write_json

SCALA_CLIENT_TIMEOUT_S = 180


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Json files in year folders that drift: a column added, a type widened."""
    root = tmp_path_factory.mktemp("logs")
    write_json(root / "2023" / "a.json", [{"id": 1, "ms": 5}, {"id": 2, "ms": 7}])
    write_json(root / "2024" / "b.json", [{"id": 3, "ms": 2.5, "host": "h"}])
    return root


def rows(spark: SparkSession, query: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in spark.sql(query).collect()]


def test_a_view_over_a_scan_is_queried_with_sql(spark: SparkSession, logs: Path) -> None:
    created = spark.sql(
        f"""CREATE TEMPORARY VIEW logs_view -- a comment
            USING scan OPTIONS (path '{logs}', `format` 'JSON', columns 'id, ms, dir0')"""
    )
    assert created.columns == []
    assert created.collect() == []
    assert spark.table("logs_view").dtypes == [("id", "bigint"), ("ms", "double"), ("dir0", "string")]
    assert rows(spark, "SELECT id, ms, dir0 FROM logs_view ORDER BY id") == [
        (1, 5.0, "2023"),
        (2, 7.0, "2023"),
        (3, 2.5, "2024"),
    ]
    assert rows(spark, "SELECT count(*) FROM logs_view WHERE dir0 = '2024'") == [(1,)]


def test_the_result_is_what_spark_gives_for_a_view(spark: SparkSession, logs: Path) -> None:
    ours = spark.sql(f"CREATE TEMP VIEW ours USING scan OPTIONS (path '{logs}', format 'json')")
    spark_own = spark.sql("CREATE TEMP VIEW spark_own AS SELECT 1 AS x")
    assert (ours.columns, ours.collect()) == (spark_own.columns, spark_own.collect())


def test_a_view_of_no_columns_counts_the_records_reading_keeps(
    spark: SparkSession, tmp_path: Path
) -> None:
    write_json(tmp_path / "d.json", [{"a": 1}, "{not json", {"a": 2}])
    spark.sql(
        f"CREATE TEMP VIEW counted USING scan OPTIONS (path '{tmp_path}', format 'json', "
        "columns '', on_error 'skip')"
    )
    assert spark.table("counted").columns == []
    assert rows(spark, "SELECT count(*) FROM counted") == [(2,)]


def test_or_replace_replaces_and_a_taken_name_is_sparks_error(
    spark: SparkSession, logs: Path
) -> None:
    spark.sql(f"CREATE TEMPORARY VIEW v2 USING scan OPTIONS (path '{logs}', format 'json')")
    with pytest.raises(AnalysisException, match="TEMP_TABLE_OR_VIEW_ALREADY_EXISTS"):
        spark.sql(f"CREATE TEMPORARY VIEW v2 USING scan OPTIONS (path '{logs}', format 'json')")
    spark.sql(
        f"""create or replace temp view `v2` using SCAN
            options ('path' = '{logs / "2024"}', 'format' = 'json', 'columns' = 'host')"""
    )
    assert rows(spark, "SELECT * FROM v2") == [("h",)]


def test_schema_on_error_and_a_column_list(spark: SparkSession, tmp_path: Path) -> None:
    write_json(tmp_path / "d.json", [{"a": 1, "b": "x"}, "{not json", {"a": 2, "b": "y", "c": 1}])
    spark.sql(
        f"""CREATE TEMPORARY VIEW typed USING scan OPTIONS (path '{tmp_path}', format 'json',
            schema 'a INT', on_error 'skip', rescued_column '_rescued_data')"""
    )
    assert spark.table("typed").dtypes == [
        ("a", "int"),
        ("b", "string"),
        ("c", "bigint"),
        ("_rescued_data", "string"),
    ]
    assert rows(spark, "SELECT a, b, c FROM typed ORDER BY a") == [(1, "x", None), (2, "y", 1)]
    spark.sql(
        f"""CREATE TEMPORARY VIEW listed (a BIGINT, b STRING) USING scan
            OPTIONS (path '{tmp_path}', format 'json', on_error 'null')"""
    )
    assert spark.table("listed").dtypes == [("a", "bigint"), ("b", "string")]
    assert rows(spark, "SELECT a, b FROM listed ORDER BY a NULLS FIRST") == [
        (None, None),
        (1, "x"),
        (2, "y"),
    ]


def test_a_temp_table_is_scanned_by_the_table_option(spark: SparkSession) -> None:
    spark.sql(
        "CREATE TEMPORARY TABLE kept USING csv PARTITIONED BY (k) AS "
        "SELECT id, CAST(id % 2 AS INT) AS k FROM range(4)"
    ).collect()
    spark.sql("CREATE TEMPORARY VIEW kept_scan USING scan OPTIONS (table 'kept', columns 'id, k')")
    assert spark.table("kept_scan").dtypes == [("id", "bigint"), ("k", "int")]
    assert rows(spark, "SELECT id, k FROM kept_scan ORDER BY id") == [(i, i % 2) for i in range(4)]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            "path '{p}', format 'json', colums 'a'",
            "option 'colums' is not an option of a scan of json files; the options are "
            ".*columns.*on_error",
        ),
        ("path '{p}', format 'json', on_error 'ignore'", "option 'on_error' must be one of"),
        ("path '{p}', format 'json', max_rows 'many'", "option 'max_rows' must be a whole"),
        ("path '{p}', format 'json', strict 'maybe'", "option 'strict' must be true or false"),
        ("path '{p}', format 'yaml'", "option 'format' must be one of json, csv"),
        ("path '{p}', format 'json', PATH '{p}'", "option 'PATH' is given twice"),
        ("format 'json'", "option 'path' is missing"),
        ("path '{p}', format 'json', schema 'a BIGINT,,'", "not valid DDL"),
        ("path '{p}/nothing', format 'json'", "does not exist"),
    ],
)
def test_each_bad_option_is_an_error_naming_it(
    spark: SparkSession, tmp_path: Path, options: str, message: str
) -> None:
    write_json(tmp_path / "d.json", [{"a": 1}])
    with pytest.raises(AnalysisException, match=message):
        spark.sql(f"CREATE TEMPORARY VIEW bad USING scan OPTIONS ({options.format(p=tmp_path)})")
    assert not spark.catalog.tableExists("bad")


def test_the_statement_is_taken_whole(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(AnalysisException, match="unexpected \\[AS SELECT 1\\]"):
        spark.sql(
            f"CREATE TEMP VIEW w USING scan OPTIONS (path '{tmp_path}', format 'json') AS SELECT 1"
        )
    with pytest.raises(AnalysisException, match="needs OPTIONS"):
        spark.sql("CREATE TEMP VIEW w USING scan")


def test_other_providers_stay_sparks(spark: SparkSession, tmp_path: Path) -> None:
    write_json(tmp_path / "d.json", [{"a": 1}])
    spark.sql(f"CREATE TEMP VIEW plain USING json OPTIONS (path '{tmp_path}')")
    assert rows(spark, "SELECT a FROM plain") == [(1,)]


def test_a_temp_table_is_materialised_from_the_view_and_the_view_dies_with_the_session(
    gateway: Gateway, logs: Path
) -> None:
    session = new_session(gateway.address)
    try:
        session.sql(
            f"CREATE TEMPORARY VIEW scanned USING scan OPTIONS (path '{logs}', format 'json')"
        )
        created = session.sql("CREATE TEMPORARY TABLE copied AS SELECT * FROM scanned").collect()
        assert [tuple(r) for r in created] == [("copied", 3)]
        assert rows(session, "SELECT sum(ms) FROM copied") == [(14.5,)]
    finally:
        session.stop()
    other = new_session(gateway.address)
    try:
        with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
            other.table("scanned").collect()
    finally:
        other.stop()


SCALA_SCRIPT = """
spark.sql("CREATE TEMPORARY VIEW scala_logs USING scan OPTIONS (path '{path}', format 'json', columns 'id, ms, dir0')")
spark.sql("CREATE TEMPORARY TABLE scala_copy AS SELECT * FROM scala_logs").collect()
val got = spark.table("scala_copy").orderBy("id").collect().map(r => s"${{r.getLong(0)}}|${{r.getDouble(1)}}|${{r.getString(2)}}").mkString(",")
println("SCAN_ROWS=" + got)
System.exit(0)
"""


def test_the_scala_client_scans_with_sql(gateway: Gateway, logs: Path, tmp_path: Path) -> None:
    """The Scala client collects no Python data source rows (transformObservedMetrics fails in
    the 4.x client), so it materialises the view into a temp table and reads that."""
    spark_home = Path(pyspark.__file__).parent
    shell = spark_home / "bin" / "spark-shell"
    if not shell.exists() or shutil.which("script") is None:
        pytest.skip(f"the Scala client needs {shell} and script(1) (a terminal for the shell)")
    script = tmp_path / "scan.scala"
    script.write_text(SCALA_SCRIPT.format(path=logs))
    command = f"{shell} --remote {gateway.address} < {script}"
    env = {**os.environ, "SPARK_HOME": str(spark_home), "TERM": "dumb"}
    shell_process = subprocess.Popen(
        ["script", "-qfec", command, "/dev/null"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=tmp_path,
        start_new_session=True,
    )
    try:
        output, _ = shell_process.communicate(timeout=SCALA_CLIENT_TIMEOUT_S)
    finally:
        if shell_process.poll() is None:
            os.killpg(shell_process.pid, signal.SIGKILL)
            shell_process.wait()
    assert "SCAN_ROWS=1|5.0|2023,2|7.0|2023,3|2.5|2024" in output, output[-4000:]
