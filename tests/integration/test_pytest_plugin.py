"""The pytest plugin's isolation, run as a project runs it: pytest on an example project.

Each example module has a test that leaves every kind of trace in its session
(a temporary view, a temporary table, settings set, changed by SQL and unset,
another current database) and a test after it that must see none of them;
they run through the test session's gateway in each isolation mode, and the
sessions the plugin made must all be released by the end of the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from connect_plugin.server.gateway import Gateway
from tests.integration.installs.venvs import clean_env

EXAMPLE_CONFTEST = '''
import json
import os

import pytest


@pytest.fixture(autouse=True)
def record_session(request, connect_plugin_test_spark):
    with open(os.environ["SESSIONS_FILE"], "a") as out:
        out.write(json.dumps([request.node.nodeid, connect_plugin_test_spark.session_id]) + "\\n")
'''

EXAMPLE_MODULE = '''
import connect_plugin


def test_leaves_traces(connect_plugin_test_spark):
    spark = connect_plugin_test_spark
    spark.range(3).createOrReplaceTempView("left_view")
    connect_plugin.create_temp_table(spark.range(2), "left_table")
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    spark.conf.set("spark.connect_plugin_example.flag", "on")
    spark.sql("SET spark.sql.session.timeZone = Asia/Tokyo")
    spark.conf.unset("spark.sql.ansi.enabled")
    spark.sql("CREATE DATABASE IF NOT EXISTS isolation_example")
    spark.catalog.setCurrentDatabase("isolation_example")


def test_sees_none_of_them(connect_plugin_test_spark):
    spark = connect_plugin_test_spark
    assert [t.name for t in spark.catalog.listTables() if t.isTemporary] == []
    assert connect_plugin.temp_tables(spark).collect() == []
    assert spark.conf.get("spark.sql.shuffle.partitions") != "7"
    assert spark.conf.get("spark.connect_plugin_example.flag", None) is None
    assert spark.conf.get("spark.sql.session.timeZone") != "Asia/Tokyo"
    assert spark.conf.get("spark.sql.ansi.enabled") == "false"
    assert spark.catalog.currentDatabase() == "default"
'''

EXAMPLE_SETUP = '''
import pytest

prepared = set()


@pytest.fixture(autouse=True)
def non_default_ansi(connect_plugin_scoped_spark):
    """Once per shared session, before its first test: a setting a test's unset must not lose."""
    spark = connect_plugin_scoped_spark
    if spark.session_id not in prepared:
        spark.conf.set("spark.sql.ansi.enabled", "false")
        prepared.add(spark.session_id)
'''


def _example_project(root: Path, ini: str = "") -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text(f'[tool.pytest.ini_options]\ntestpaths = ["tests"]\n{ini}')
    (root / "tests" / "conftest.py").write_text(EXAMPLE_SETUP + EXAMPLE_CONFTEST)
    for name in ("test_first.py", "test_second.py"):
        (root / "tests" / name).write_text(EXAMPLE_MODULE)
    return root


def _run(project: Path, gateway: Gateway, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    sessions = project / "sessions.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        capture_output=True, text=True, timeout=300, cwd=project,
        env=clean_env({"SPARK_REMOTE": gateway.address, "SESSIONS_FILE": str(sessions)}),
        check=False,
    )
    recorded = [json.loads(line) for line in sessions.read_text().splitlines()] if sessions.exists() else []
    return done, dict(recorded)


@pytest.mark.parametrize(
    ("isolation", "sessions"),
    [("run", 1), ("module", 2), ("test", 4)],
)
def test_no_trace_of_a_test_reaches_the_next(
    gateway: Gateway, workspace: Path, tmp_path: Path, isolation: str, sessions: int
) -> None:
    project = _example_project(tmp_path / "project")
    done, seen = _run(project, gateway, f"--connect-plugin-isolation={isolation}")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "4 passed" in done.stdout
    assert len(seen) == 4
    assert len(set(seen.values())) == sessions
    if isolation == "module":
        for module in ("test_first.py", "test_second.py"):
            assert len({s for test, s in seen.items() if module in test}) == 1
    leftovers = [s for s in set(seen.values()) if (workspace / s).exists()]
    assert leftovers == [], "every session the plugin made is released by the end of the run"


def test_the_isolation_is_an_ini_option_too(gateway: Gateway, tmp_path: Path) -> None:
    project = _example_project(tmp_path / "project", ini='connect_plugin_isolation = "test"\n')
    done, seen = _run(project, gateway)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert len(set(seen.values())) == 4


def test_an_unknown_isolation_is_a_usage_error(gateway: Gateway, tmp_path: Path) -> None:
    project = _example_project(tmp_path / "project", ini='connect_plugin_isolation = "class"\n')
    done, seen = _run(project, gateway)
    assert done.returncode != 0
    assert "connect_plugin_isolation = 'class': choose one of run, module, test" in done.stderr + done.stdout
    assert seen == {}


DATA_PATH_TESTS = '''
import os
import stat
from pathlib import Path

import connect_plugin


def test_a_scan_of_what_the_test_wrote(connect_plugin_test_spark, connect_plugin_data_path, tmp_path):
    (connect_plugin_data_path / "a.json").write_text('{"x": 1}\\n{"x": 2}\\n')
    frame = connect_plugin.scan(connect_plugin_test_spark, str(connect_plugin_data_path), format="json")
    assert sorted(r.x for r in frame.collect()) == [1, 2]
    shared = os.environ.get("CONNECT_PLUGIN_DATA_DIR")
    if shared:
        assert connect_plugin_data_path.parent == Path(shared)
        assert stat.S_IMODE(connect_plugin_data_path.stat().st_mode) == 0o755
    else:
        assert connect_plugin_data_path == tmp_path
'''


@pytest.mark.parametrize("shared", [True, False], ids=["CONNECT_PLUGIN_DATA_DIR", "tmp_path"])
def test_the_data_path_is_readable_where_the_gateway_reads(
    gateway: Gateway, tmp_path: Path, shared: bool
) -> None:
    """A container's user is not the test's: with CONNECT_PLUGIN_DATA_DIR the folder is
    in the shared folder and open to others, since pytest's own folders are private."""
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    (project / "tests" / "test_data.py").write_text(DATA_PATH_TESTS)
    env = {"SPARK_REMOTE": gateway.address}
    if shared:
        env["CONNECT_PLUGIN_DATA_DIR"] = str(tmp_path / "shared" / "data")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        capture_output=True, text=True, timeout=300, cwd=project, env=clean_env(env), check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
    if shared:
        (made,) = (tmp_path / "shared" / "data").iterdir()
        assert made.name.startswith("test_a_scan_of_what_the_test_wrote-")
