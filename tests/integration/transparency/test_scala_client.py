"""The stock Scala Spark Connect client, directly and through the gateway.

The pyspark wheel ships the Scala client (``pyspark/jars/connect-repl``) and
the Scala compiler (``pyspark/jars``): ``ScalaProbe.scala`` is compiled once
per test session and run with ``java``, one process per endpoint.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pyspark
import pytest

from connect_plugin.server.gateway import Gateway
from tests.integration.support import Upstream

JARS = Path(pyspark.__file__).parent / "jars"
CLIENT_JARS = JARS / "connect-repl"
SOURCE = Path(__file__).with_name("ScalaProbe.scala")
JAVA_OPTIONS = ("--add-opens=java.base/java.nio=ALL-UNNAMED",)
"""What Arrow needs on Java 17 to read results (as Spark's own launcher passes it)."""
RUN_TIMEOUT_S = 300


@pytest.fixture(scope="session")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The compiled probe's folder."""
    clients = sorted(CLIENT_JARS.glob("spark-connect-client-jvm_*.jar"))
    if not clients or shutil.which("java") is None:
        pytest.skip(f"no Scala Spark Connect client under {CLIENT_JARS}, or no java")
    out = tmp_path_factory.mktemp("scala_probe")
    compiler = ["java", "-cp", f"{JARS}/*", "scala.tools.nsc.Main", "-usejavacp"]
    classpath = f"{clients[0]}:{JARS}/*"
    subprocess.run(
        [*compiler, "-cp", classpath, "-d", str(out), str(SOURCE)],
        check=True,
        capture_output=True,
        timeout=RUN_TIMEOUT_S,
    )
    return out


def _run(probe: Path, address: str, *args: str) -> dict[str, list[str]]:
    classpath = f"{probe}:{CLIENT_JARS}/*:{JARS}/*"
    done = subprocess.run(
        ["java", *JAVA_OPTIONS, "-cp", classpath, "ScalaProbe", address, *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    steps = {}
    for line in done.stdout.splitlines():
        label, _, rest = line.partition("|")
        if rest:
            steps[label] = rest.split("|")
    assert steps, done.stderr[-2000:]
    return steps


@pytest.fixture(scope="session")
def scan_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("scala_scan")
    rows = [{"id": 1, "s": "a"}, {"id": 2, "s": "b"}]
    (folder / "part.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


@pytest.fixture(scope="session")
def steps(
    probe: Path, upstream: Upstream, gateway: Gateway, scan_folder: Path
) -> dict[str, dict[str, list[str]]]:
    """Each endpoint's steps; only the gateway knows temp tables and scans."""
    return {
        "direct": _run(probe, upstream.address),
        "gateway": _run(probe, gateway.address, str(scan_folder)),
    }


PARSE = [
    "RAISED",
    "org.apache.spark.sql.catalyst.parser.ParseException",
    "PARSE_SYNTAX_ERROR",
    "42601",
]
UNRESOLVED = [
    "RAISED",
    "org.apache.spark.sql.AnalysisException",
    "UNRESOLVED_COLUMN.WITH_SUGGESTION",
    "42703",
]


@pytest.mark.parametrize("endpoint", ["direct", "gateway"])
def test_spark_errors_read_the_same_in_the_scala_client(
    steps: dict[str, dict[str, list[str]]], endpoint: str
) -> None:
    seen = steps[endpoint]
    assert seen["parse_error"] == PARSE
    assert seen["analysis_error"] == UNRESOLVED
    assert seen["cttas_head_syntax_error"] == PARSE


def test_a_cttas_over_a_failing_query_fails_in_the_scala_client_as_the_query_does(
    steps: dict[str, dict[str, list[str]]],
) -> None:
    assert steps["gateway"]["cttas_analysis_error"] == steps["direct"]["analysis_error"]


def test_the_scala_client_collects_a_scan_and_reads_temp_tables(
    steps: dict[str, dict[str, list[str]]],
) -> None:
    seen = steps["gateway"]
    assert seen["cttas"] == ["OK", "[t,1]"]
    assert seen["read_temp_table"] == ["OK", "[1]"]
    assert seen["scan_view"] == ["OK", ""]
    assert seen["scan_collect"] == ["OK", "[1,a],[2,b]"]
    assert seen["scan_count"] == ["OK", "[2]"]


def test_our_own_conditions_are_unknown_to_the_scala_clients_templates(
    steps: dict[str, dict[str, list[str]]],
) -> None:
    """The limit the README states: the Scala client rebuilds an AnalysisException from
    Spark's error-class templates, which have no CONNECT_PLUGIN.* class."""
    internal = ["RAISED", "org.apache.spark.SparkException", "INTERNAL_ERROR", "XX000"]
    assert steps["gateway"]["cttas_exists"] == internal
