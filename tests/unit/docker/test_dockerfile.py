"""The Dockerfile: hadolint-clean, pinned, non-root, and wired to the entrypoint it copies."""

from __future__ import annotations

import re
import subprocess

import pytest
import tomllib

from connect_plugin.server.embedded import MIN_JAVA
from tests.image import DOCKER_DIR, DOCKERFILE, REPO
from tests.unit.docker.image_checks import (
    copies,
    entrypoint_command,
    exec_form,
    health_command,
    instructions,
    tool,
)

HADOLINT = tool("hadolint")
PINNED_TAG = re.compile(r"^[\w./-]+:\d+\.\d+\.\d+[\w.-]*$")


@pytest.mark.skipif(HADOLINT is None, reason="hadolint is not installed (pip install -e '.[dev]')")
def test_hadolint_finds_nothing() -> None:
    assert HADOLINT is not None
    result = subprocess.run(
        [HADOLINT, "--no-color", "--failure-threshold", "info", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_every_hadolint_exception_says_why() -> None:
    lines = DOCKERFILE.read_text().splitlines()
    for number, line in enumerate(lines):
        if "hadolint ignore=" in line:
            reason = lines[number - 1].strip() if number else ""
            why = f"line {number + 1} ignores a hadolint rule without a comment above saying why"
            assert reason.startswith("#"), why
            assert "hadolint" not in reason, why


def test_the_base_image_is_pinned_to_a_full_version() -> None:
    (base,) = [item.value for item in instructions() if item.name == "FROM"]
    assert PINNED_TAG.match(base), f"FROM {base}: pin a full version tag, not a moving one"


def test_java_and_python_match_what_the_package_needs() -> None:
    run = " ".join(item.value for item in instructions() if item.name == "RUN")
    java = int(re.search(r"openjdk-(\d+)-jre", run).group(1))  # type: ignore[union-attr]
    assert java >= MIN_JAVA
    (base,) = [item.value for item in instructions() if item.name == "FROM"]
    assert base.startswith("python:3.11.")


def test_the_image_runs_as_a_user_other_than_root() -> None:
    users = [item.value for item in instructions() if item.name == "USER"]
    assert users, "no USER instruction: the container would run as root"
    assert users[-1].split(":")[0] not in ("root", "0")


def test_entrypoint_and_healthcheck_run_the_copied_script() -> None:
    command = entrypoint_command()
    assert copies()[command[1]] == ["docker/entrypoint.py"]
    assert command[0].startswith("/opt/connect-plugin/venv/")
    (check,) = [item.value for item in instructions() if item.name == "HEALTHCHECK"]
    assert ["CMD", *exec_form(check)] == health_command()


def test_copied_files_exist_and_pass_the_dockerignore() -> None:
    ignore = (DOCKER_DIR / "Dockerfile.dockerignore").read_text().splitlines()
    admitted = {line.removeprefix("!").rstrip("/") for line in ignore if line.startswith("!")}
    for sources in copies().values():
        for source in sources:
            assert (REPO / source).exists(), f"COPY {source}: no such file in the repository"
            assert source in admitted, f"COPY {source}: excluded by Dockerfile.dockerignore"


def test_nothing_is_fetched_but_packages() -> None:
    for item in instructions():
        assert not re.search(r"\b(curl|wget)\b|https?://", item.value), (
            f"line {item.line}: {item.name} downloads a file; install packages from their registry"
        )


def test_the_image_installs_the_server_extra_from_a_whole_build_tree() -> None:
    """The image runs the gateway and the embedded server, so it needs the server extra;
    pip builds the package from what was copied, so every folder pyproject.toml maps
    into the package must be copied beside it."""
    run = " ".join(item.value for item in instructions() if item.name == "RUN")
    assert re.search(r'pip install [^&]*"?/tmp/connect-plugin\[server\]"?', run)
    built = {
        source
        for target, sources in copies().items()
        if target.startswith("/tmp/connect-plugin")
        for source in sources
    }
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    needed = {"pyproject.toml", "README.md", "connect_plugin", *setuptools["package-dir"].values()}
    assert needed <= built, f"the image's build tree lacks {sorted(needed - built)}"
