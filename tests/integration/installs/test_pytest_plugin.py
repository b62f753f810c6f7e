"""The pytest plugin as a user's project meets it: pytest run on a small example project.

Once on the thin-client install against the test session's gateway through
``SPARK_REMOTE``, and once on the server install with no ``SPARK_REMOTE``,
where the plugin starts and stops its own embedded stack.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from connect_plugin.server.gateway import Gateway
from tests.integration.installs.venvs import Venv, clean_env
from tests.integration.support import spark_connect_server_pids

EXAMPLE_TESTS = '''
import connect_plugin


def test_a_temp_table(connect_plugin_test_spark):
    spark = connect_plugin_test_spark
    row = connect_plugin.create_temp_table(spark.range(5), "example_t")
    assert row.rows_written == 5
    assert spark.sql("SELECT count(*) AS n FROM example_t").first().n == 5


def test_the_previous_tests_table_is_gone(connect_plugin_test_spark):
    names = [r["name"] for r in connect_plugin.temp_tables(connect_plugin_test_spark).collect()]
    assert names == ["kept"]


def test_a_scan(connect_plugin_test_spark, tmp_path):
    (tmp_path / "a.json").write_text('{"x": 1}\\n{"x": 2}\\n')
    frame = connect_plugin.scan(connect_plugin_test_spark, str(tmp_path), format="json")
    assert frame.count() == 2


def test_one_session_for_the_run(connect_plugin_spark, connect_plugin_test_spark, connect_plugin_remote):
    assert connect_plugin_spark is connect_plugin_test_spark
    assert connect_plugin_remote.startswith("sc://")
'''

EXAMPLE_CONFTEST = '''
import pytest

import connect_plugin


@pytest.fixture(scope="session", autouse=True)
def kept(connect_plugin_spark):
    """A table made before any test: the per-test fixture leaves it alone."""
    connect_plugin.create_temp_table(connect_plugin_spark.range(1), "kept")
'''


def _example_project(root: Path) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    (root / "tests" / "conftest.py").write_text(EXAMPLE_CONFTEST)
    (root / "tests" / "test_example.py").write_text(EXAMPLE_TESTS)
    return root


def test_the_plugin_uses_spark_remote(thin_client: Venv, gateway: Gateway, tmp_path: Path) -> None:
    project = _example_project(tmp_path / "project")
    done = thin_client.run(
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "base")],
        env={"SPARK_REMOTE": gateway.address},
        cwd=project,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "4 passed" in done.stdout
    assert not list((tmp_path / "base").glob("connect-plugin*")), "no embedded stack was needed"


def test_the_plugin_starts_its_own_stack_without_spark_remote(tmp_path: Path) -> None:
    project = _example_project(tmp_path / "project")
    env = clean_env()
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--basetemp", str(tmp_path / "base")],
        capture_output=True, text=True, timeout=600, env=env, cwd=project, check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "4 passed" in done.stdout
    (state,) = (tmp_path / "base").glob("connect-plugin[0-9]*/state")
    assert (state / "logs" / "spark-connect.log").stat().st_size > 0
    assert not spark_connect_server_pids(mentioning=str(state)), "the plugin's server outlived the run"
    assert sorted(os.listdir(project)) == ["pyproject.toml", "tests"]
