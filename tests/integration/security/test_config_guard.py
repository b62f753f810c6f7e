"""Settings the gateway relies on cannot be changed through it, by any route a client has."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql.connect import plan
from pyspark.sql.connect.dataframe import DataFrame

from connect_plugin.server.gateway import Gateway

COMMITTER = "spark.sql.sources.outputCommitterClass"
COMMIT = "spark.sql.sources.commitProtocolClass"
SCAN_OPTION = "spark.datasource.connect_plugin_scan.spec"


def _nested_sql(spark: SparkSession, query: str) -> None:
    """``query`` as a SQL relation inside a union, not at the plan's root."""
    sql = DataFrame(plan.SQL(query), spark)
    spark.range(1).selectExpr("CAST(id AS STRING) AS key", "'' AS value").union(sql).collect()


ROUTES: dict[str, Callable[[SparkSession], object]] = {
    "conf.set": lambda s: s.conf.set(COMMITTER, "false"),
    "conf.unset": lambda s: s.conf.unset(COMMIT),
    "conf.set data source": lambda s: s.conf.set(SCAN_OPTION, "{}"),
    "SET": lambda s: s.sql(f"SET {COMMITTER}=false"),
    "SET backticks": lambda s: s.sql(f"SET `{COMMIT}` = my.Protocol"),
    "RESET key": lambda s: s.sql(f"RESET {COMMITTER}"),
    "bare RESET": lambda s: s.sql("RESET"),
    "second statement": lambda s: s.sql(f"SET spark.sql.shuffle.partitions=3; SET {COMMITTER}=0"),
    "compound block": lambda s: s.sql(f"BEGIN SELECT 1; SET {COMMITTER} = false; END"),
    "compound RESET": lambda s: s.sql("BEGIN RESET; END"),
    "EXECUTE IMMEDIATE": lambda s: s.sql(f"EXECUTE IMMEDIATE 'SET {COMMITTER}=false'"),
    "SQL inside a plan": lambda s: _nested_sql(s, f"SET {COMMITTER}=false"),
    "SQL inside an analysed plan": lambda s: DataFrame(plan.SQL("RESET"), s).schema,
}


@pytest.mark.parametrize("route", list(ROUTES))
def test_protected_settings_cannot_be_changed(spark: SparkSession, route: str) -> None:
    before = {key: spark.conf.get(key, None) for key in (COMMITTER, COMMIT)}
    with pytest.raises(PySparkException, match=r"CONNECT_PLUGIN\.SETTING_PROTECTED") as refused:
        ROUTES[route](spark)
    message = str(refused.value)
    assert "RESET key" in message or "docs/security.md" in message, message
    assert {key: spark.conf.get(key, None) for key in (COMMITTER, COMMIT)} == before


def test_the_error_names_the_key_and_is_permission_denied(spark: SparkSession) -> None:
    with pytest.raises(PySparkException, match=rf"\[{COMMITTER}\]") as refused:
        spark.conf.set(COMMITTER, "false")
    assert refused.value.getGrpcStatusCode().name == "PERMISSION_DENIED"  # type: ignore[attr-defined]


BUILDER = """
import sys
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
try:
    SparkSession.builder.remote(sys.argv[1]).config(sys.argv[2], "false").create()
except PySparkException as exc:
    print(exc)
"""


def test_builder_config_of_a_protected_key_is_refused(gateway: Gateway) -> None:
    """In a process of its own: the client a refused builder made cannot be stopped, and
    pyspark's exit hook would call the gateway long after this test's gateway is gone."""
    done = subprocess.run(
        [sys.executable, "-c", BUILDER, gateway.address, COMMITTER],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert re.search(rf"SETTING_PROTECTED.*\[{COMMITTER}\]", done.stdout), done.stdout


def test_values_naming_the_workspace_are_refused(spark: SparkSession, workspace: Path) -> None:
    with pytest.raises(PySparkException, match=r"\[spark\.my\.location\].*workspace"):
        spark.conf.set("spark.my.location", f"{workspace}/elsewhere")
    with pytest.raises(PySparkException, match="SETTING_PROTECTED"):
        spark.sql(f"SET spark.my.location={workspace}")
    assert spark.conf.get("spark.my.location", None) is None


def test_reads_and_other_settings_pass(spark: SparkSession) -> None:
    spark.conf.get(COMMITTER, None)
    assert spark.sql(f"SET {COMMITTER}").collect()[0]["key"] == COMMITTER
    spark.conf.set("spark.sql.shuffle.partitions", "3")
    spark.sql("SET spark.sql.shuffle.partitions=5").collect()
    assert spark.conf.get("spark.sql.shuffle.partitions") == "5"
    spark.sql("RESET spark.sql.shuffle.partitions").collect()
    spark.conf.unset("spark.sql.shuffle.partitions")
    row = spark.sql(f"SELECT '{COMMITTER}' AS k, 'RESET' AS reset_word -- RESET").collect()[0]
    assert row["k"] == COMMITTER
