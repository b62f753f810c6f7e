"""The GitHub Actions example: a valid workflow, shown whole in docker/README.md, wired to this checkout.

GitHub cannot run here, so the file is checked statically: PyYAML reads it,
check-jsonschema validates it against the GitHub workflow schema it ships
(SchemaStore's, vendored: no network), bash parses every script, and each
thing the workflow names in this project (compose file, extras, pytest
option, ready line, port) must exist as named.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from connect_plugin.cli import READY_LINE
from connect_plugin.config import Config
from connect_plugin.pytest_plugin import ISOLATION_SCOPES
from tests.image import DOCKER_DIR, LOCAL_COMPOSE, REPO

WORKFLOW = DOCKER_DIR / "examples" / "github-actions.yml"
CHECKOUT_PATH = ".connect-plugin"
"""Where the workflow checks out connect-plugin, inside the user's project."""


def _workflow() -> dict[Any, Any]:
    model: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text())
    return model


def _steps() -> list[dict[str, Any]]:
    return [step for job in _workflow()["jobs"].values() for step in job["steps"]]


def _scripts() -> list[str]:
    return [step["run"] for step in _steps() if "run" in step]


def _schema_check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
         str(path)],
        capture_output=True, text=True, timeout=120, check=False,
    )


def test_the_workflow_is_valid_for_github() -> None:
    done = _schema_check(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_schema_check_refuses_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on: ubuntu-latest", "runs_on: ubuntu-latest"))
    done = _schema_check(broken)
    assert done.returncode != 0
    assert "runs_on" in done.stdout + done.stderr


def test_docker_readme_shows_the_workflow_verbatim() -> None:
    readme = (DOCKER_DIR / "README.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.S)
    assert WORKFLOW.read_text() in blocks


def test_both_routes_are_there() -> None:
    jobs = _workflow()["jobs"]
    scripts = {name: "\n".join(s.get("run", "") for s in job["steps"]) for name, job in jobs.items()}
    assert "docker compose -f" in scripts["container"]
    assert "connect-plugin serve --local" in scripts["background"]
    assert any(s.get("uses", "").startswith("actions/setup-java@") for s in jobs["background"]["steps"])
    # PyYAML reads the bare key `on` as true (YAML 1.1); GitHub reads it as "on".
    assert set(_workflow()[True]) == {"push", "pull_request"}


@pytest.mark.parametrize("script", _scripts(), ids=lambda s: s.splitlines()[0][:40])
def test_every_script_is_valid_bash(script: str) -> None:
    done = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_what_it_names_in_this_project_exists() -> None:
    text = "\n".join(_scripts())
    composes = re.findall(rf"-f {re.escape(CHECKOUT_PATH)}/(\S+)", text)
    assert composes
    assert {REPO / c for c in composes} == {LOCAL_COMPOSE}
    extras = set(re.findall(rf'"\./{re.escape(CHECKOUT_PATH)}\[(\w+)\]"', text))
    assert extras == {"client", "server"}
    pyproject = (REPO / "pyproject.toml").read_text()
    assert all(re.search(rf"^{extra} = \[", pyproject, re.M) for extra in extras)
    isolations = set(re.findall(r"--connect-plugin-isolation=(\w+)", text))
    assert isolations
    assert isolations <= set(ISOLATION_SCOPES)
    assert READY_LINE.split("{")[0].strip() in text


def test_the_tests_reach_the_gateway_where_it_listens() -> None:
    compose = yaml.safe_load(LOCAL_COMPOSE.read_text())
    (published,) = compose["services"]["spark"]["ports"]
    published_port = re.search(r"PUBLISHED_PORT:-(\d+)\}", published)
    assert published_port is not None
    for name, job in _workflow()["jobs"].items():
        remote = job["env"]["SPARK_REMOTE"]
        assert remote == f"sc://127.0.0.1:{published_port.group(1)}", name
    assert f"--port {Config().port}" in "\n".join(_scripts())
    assert Config().port == int(published_port.group(1))
    (volume,) = compose["services"]["spark"]["volumes"]
    assert volume.startswith("${CONNECT_PLUGIN_DATA_DIR"), "the container mounts the named folder"
    assert "CONNECT_PLUGIN_DATA_DIR" in _workflow()["jobs"]["container"]["env"]
