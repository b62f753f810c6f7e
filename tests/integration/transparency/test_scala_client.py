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
RAISED_FIELDS = ("RAISED", "exception", "condition", "SQL state", "message")
"""A failed step's fields; the message, last, may hold any character."""


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
            steps[label] = rest.split("|", len(RAISED_FIELDS) - 1)
    assert steps, done.stderr[-2000:]
    return steps


@pytest.fixture(scope="session")
def scan_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("scala_scan")
    rows = [{"id": 1, "s": "a"}, {"id": 2, "s": "b"}]
    (folder / "part.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


@pytest.fixture(scope="session")
def bad_record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A JSON file whose one value cannot be read as the INT its scan declares."""
    path = tmp_path_factory.mktemp("scala_bad_record") / "bad.json"
    path.write_text(json.dumps({"id": "x"}) + "\n")
    return path


@pytest.fixture(scope="session")
def steps(
    probe: Path, upstream: Upstream, gateway: Gateway, scan_folder: Path, bad_record: Path
) -> dict[str, dict[str, list[str]]]:
    """Each endpoint's steps; only the gateway knows temp tables and scans."""
    return {
        "direct": _run(probe, upstream.address),
        "gateway": _run(probe, gateway.address, str(scan_folder), str(bad_record)),
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
    assert seen["parse_error"][:4] == PARSE
    assert seen["analysis_error"][:4] == UNRESOLVED
    assert seen["cttas_head_syntax_error"][:4] == PARSE


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


@pytest.mark.parametrize(
    ("step", "exception", "error_class", "sql_state"),
    [
        ("cttas_exists", "org.apache.spark.sql.AnalysisException", "TEMP_TABLE_EXISTS", "42P07"),
        (
            "scan_path_not_found",
            "org.apache.spark.sql.AnalysisException",
            "SCAN_PATH_NOT_FOUND",
            "42K03",
        ),
        ("scan_bad_record", "org.apache.spark.SparkRuntimeException", "SCAN_BAD_RECORD", "22000"),
    ],
)
def test_our_own_conditions_reach_the_scala_client_typed_with_our_message_and_state(
    steps: dict[str, dict[str, list[str]]],
    step: str,
    exception: str,
    error_class: str,
    sql_state: str,
) -> None:
    """The exceptions the Scala client formats from Spark's templates, which know no
    CONNECT_PLUGIN.* class: its condition is the template-free one the gateway gives it
    (status.MESSAGE_ONLY_CLASS); exception, message and SQL state are as pyspark has them."""
    assert steps["gateway"]["scan_bad_view"] == ["OK", ""]
    raised, got_exception, condition, got_sql_state, message = steps["gateway"][step]
    assert (raised, got_exception, got_sql_state) == ("RAISED", exception, sql_state)
    assert condition == "_LEGACY_ERROR_TEMP_3100"
    assert message.startswith(f"[CONNECT_PLUGIN.{error_class}] ")
    assert "INTERNAL_ERROR" not in message


def test_a_spark_exception_of_ours_keeps_its_condition_in_the_scala_client(
    steps: dict[str, dict[str, list[str]]],
) -> None:
    raised, exception, condition, sql_state, message = steps["gateway"]["setting_protected"]
    assert (raised, exception) == ("RAISED", "org.apache.spark.SparkException")
    assert (condition, sql_state) == ("CONNECT_PLUGIN.SETTING_PROTECTED", "46110")
    assert message.startswith("[CONNECT_PLUGIN.SETTING_PROTECTED] the session setting")
