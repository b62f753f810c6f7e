"""Test layout: tests/unit needs nothing; tests/integration needs a real Spark Connect server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_plugin.config import ENV_PREFIX
from tests.object_store import ObjectStore, running_object_store
from tests.scan_differential import budget
from tests.unit.fuzz.harness import summary

INTEGRATION_DIR = Path(__file__).parent / "integration"
CLASS_ARCHIVE_ENV = f"{ENV_PREFIX}CLASS_ARCHIVE"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--compat",
        choices=("ends", "all"),
        default="ends",
        help="Spark versions of the compatibility tests: the oldest and newest supported "
        "(default) or every client and server version (./dev compat)",
    )
    parser.addoption(
        "--fuzz-seconds",
        type=float,
        default=None,
        metavar="N",
        help="Seconds of fuzzing split between the fuzz tests (default 30)",
    )
    parser.addoption(
        budget.OPTION,
        type=float,
        default=None,
        metavar="N",
        help="Seconds of random scan query sequences split between the differential scan "
        f"tests (default {budget.DEFAULT_SECONDS:g}, derandomized; given, new cases every run)",
    )
    parser.addoption(
        "--roundtrip-seconds",
        type=float,
        default=None,
        metavar="N",
        help="Seconds of random tables for the temp-table round-trip property (default 30)",
    )
    parser.addoption(
        "--dml-seconds",
        type=float,
        default=None,
        metavar="N",
        help="Seconds of random statement sequences (INSERT, UPDATE, DELETE, MERGE, TRUNCATE) "
        "compared with DuckDB (default 20)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if INTEGRATION_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = summary(terminalreporter.config)
    if lines:
        terminalreporter.section("fuzzing")
        for line in lines:
            terminalreporter.write_line(line)
    differential = budget.summary(terminalreporter.config)
    if differential:
        terminalreporter.section("scan differential")
        for line in differential:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session", autouse=True)
def own_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The suite's processes cache in a folder of its own, not the user's, and its ``serve
    --local`` runs keep no JVM class archive: each would write one at its stop, slower, for
    starts that never come (``test_class_archive`` writes and maps its own)."""
    folder = tmp_path_factory.mktemp("cache-home")
    wanted = {"XDG_CACHE_HOME": str(folder), CLASS_ARCHIVE_ENV: "false"}
    before = {key: os.environ.get(key) for key in wanted}
    os.environ.update(wanted)
    try:
        yield folder
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def object_store() -> Iterator[ObjectStore]:
    """An S3-compatible server on loopback (moto), shared by the whole test session."""
    with running_object_store() as store:
        yield store
