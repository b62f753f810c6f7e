"""The GitHub Actions example's background route, run here as the runner would run its steps.

The workflow's own scripts run under bash: the step that starts
``connect-plugin serve --local`` in the background and waits for its ready
line, then the test step, in a project whose tests are the ones
docs/testing.md shows. Only the port (a free one instead of 15002, which
may be taken on a shared machine) and the runner's folders are the test's.
The container route needs a Docker engine; tests/unit/docker checks it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from connect_plugin.server.embedded import free_port
from tests.docs_blocks import blocks
from tests.image import DOCKER_DIR
from tests.integration.installs.venvs import clean_env
from tests.integration.support import spark_connect_server_pids

WORKFLOW = DOCKER_DIR / "examples" / "github-actions.yml"
STEP_TIMEOUT_S = 400
STOP_TIMEOUT_S = 60
WORKFLOW_PORT = "15002"


def _steps(job: str) -> dict[str, str]:
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"][job]["steps"]
    return {step["name"]: step["run"] for step in steps if "run" in step and "name" in step}


def _stop_group(group: int) -> None:
    """SIGTERM to the process group the start step left running, then wait for it to go."""
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(group, signal.SIGKILL)


def test_the_background_route_starts_the_gateway_and_the_tests_pass(tmp_path: Path) -> None:
    steps = _steps("background")
    job_env = yaml.safe_load(WORKFLOW.read_text())["jobs"]["background"]["env"]
    port = str(free_port())
    start = steps["Start Spark Connect and the gateway in the background"]
    assert f"--port {WORKFLOW_PORT}" in start
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir()
    state = tmp_path / "state"
    env = clean_env({
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "RUNNER_TEMP": str(runner_temp),
        "CONNECT_PLUGIN_STATE_DIR": str(state),
        "CONNECT_PLUGIN_WORKSPACE": str(tmp_path / "workspace"),
        "SPARK_REMOTE": job_env["SPARK_REMOTE"].replace(WORKFLOW_PORT, port),
    })
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    examples = [b for b in blocks() if b.lang == "python" and b.is_pytest_module()]
    for number, block in enumerate(examples):
        (project / "tests" / f"test_doc_{number}.py").write_text(block.text)

    started = subprocess.Popen(
        ["bash", "-e", "-c", start.replace(f"--port {WORKFLOW_PORT}", f"--port {port}")],
        env=env, cwd=project, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        out, err = started.communicate(timeout=STEP_TIMEOUT_S)
        assert started.returncode == 0, out + err
        assert (runner_temp / "gateway.out").read_text().startswith("connect-plugin gateway ready at")
        tests = subprocess.run(
            ["bash", "-e", "-c", steps["Tests"]], env=env, cwd=project,
            capture_output=True, text=True, timeout=STEP_TIMEOUT_S, check=False,
        )
        assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
        assert f"{len(examples)} passed" in tests.stdout
    finally:
        _stop_group(started.pid)
    assert not spark_connect_server_pids(mentioning=str(state)), "the gateway's Spark outlived it"
