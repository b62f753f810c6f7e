"""Test layout: tests/unit needs nothing; tests/integration needs a real Spark Connect server."""

from __future__ import annotations

import base64
import json
import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connect_plugin.config import ENV_PREFIX
from connect_plugin.spark_processes.class_archive import SUBMIT_OPTIONS, with_option
from tests.integration.cluster.cluster import TIMINGS
from tests.integration.installs.venvs import INSTALL_REPORT
from tests.integration.temp_tables.dml_sequences import DML_RUNS
from tests.integration.temp_tables.roundtrip_check import STATS as ROUND_TRIP_STATS
from tests.integration.temp_tables.roundtrip_check import summary as round_trip_summary
from tests.object_store import ObjectStore, running_object_store
from tests.parallel import DURATIONS, ByFileAndFolder, recorded_durations, unit_of
from tests.scan_differential import budget
from tests.unit.fuzz.harness import STATS as FUZZ_STATS
from tests.unit.fuzz.harness import summary

INTEGRATION_DIR = Path(__file__).parent / "integration"
CLASS_ARCHIVE_ENV = f"{ENV_PREFIX}CLASS_ARCHIVE"
SUITE_JVM_OPTION = "-XX:TieredStopAtLevel=1"
SUMMARY_STATS = "connect_plugin_summary_stats"
UNIT_SECONDS: dict[str, float] = {}
"""Test seconds per unit of work of this run (a parallel run's controller hears of every
test), for ``--record-durations``."""


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
        help="Seconds of random tables for the temp-table round-trip property (default 20)",
    )
    parser.addoption(
        "--roundtrip-seed",
        type=int,
        default=None,
        metavar="S",
        help="Hypothesis seed of the round-trip property's first run (each next run takes the "
        "next seed; default random, shown in the summary)",
    )
    parser.addoption(
        "--dml-seed",
        type=int,
        default=None,
        metavar="S",
        help="Hypothesis seed of the DML differential's first run (each next run takes the "
        "next seed; default random, shown in the summary)",
    )
    parser.addoption(
        "--dml-seconds",
        type=float,
        default=None,
        metavar="N",
        help="Seconds of random statement sequences (INSERT, UPDATE, DELETE, MERGE, TRUNCATE) "
        "compared with DuckDB (default 20)",
    )
    parser.addoption(
        "--worker-soak-seconds",
        type=float,
        default=None,
        metavar="N",
        help="Seconds of failing, rejecting, interrupted and ended scans after which no Python "
        "worker may outlive its daemon (default 60)",
    )
    parser.addoption(
        "--record-durations",
        action="store_true",
        help=f"Write the seconds each test file took to {DURATIONS.name}, from which the "
        "two workers take the longest files first",
    )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    unit = unit_of(report.nodeid)
    UNIT_SECONDS[unit] = UNIT_SECONDS.get(unit, 0.0) + report.duration


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if INTEGRATION_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What the budgeted and timed tests ran and found, in sections of their own."""
    config = terminalreporter.config
    sections = {
        "fuzzing": summary(config),
        "scan differential": budget.summary(config),
        "round trips": round_trip_summary(config),
        "dml differential": config.stash.get(DML_RUNS, []),
        "fresh environments": INSTALL_REPORT,
        "cluster timings": [f"{seconds:8.1f} s  {step}" for step, seconds in TIMINGS.items()],
    }
    for section, lines in sections.items():
        if lines:
            terminalreporter.section(section)
            for line in lines:
                terminalreporter.write_line(line)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") != "loadfile":
        return None
    return ByFileAndFolder(config, log)


_CARRIED = (FUZZ_STATS, budget.STATS, ROUND_TRIP_STATS, DML_RUNS)
"""What a worker of a parallel run (pytest-xdist) hands to the controller for the summary,
with ``INSTALL_REPORT`` and ``TIMINGS``."""


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    if output is None and session.config.getoption("record_durations"):
        root = Path(session.config.rootpath)
        recorded = {u: s for u, s in recorded_durations().items() if (root / u).exists()}
        recorded.update(
            {unit: round(seconds, 1) for unit, seconds in UNIT_SECONDS.items()}
        )
        DURATIONS.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n")
    if output is not None:
        carried = ([session.config.stash.get(key, []) for key in _CARRIED], INSTALL_REPORT, TIMINGS)
        output[SUMMARY_STATS] = base64.b64encode(pickle.dumps(carried)).decode()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    carried = node.workeroutput.get(SUMMARY_STATS)
    if carried is None:
        return
    stats, installs, timings = pickle.loads(base64.b64decode(carried))
    for key, values in zip(_CARRIED, stats, strict=True):
        node.config.stash.setdefault(key, []).extend(values)
    INSTALL_REPORT.extend(installs)
    TIMINGS.update(timings)


@pytest.fixture(scope="session", autouse=True)
def suite_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The suite's processes cache in a folder of its own, not the user's, and its ``serve
    --local`` runs keep no JVM class archive: each would write one at its stop, slower, for
    starts that never come (``test_class_archive`` writes and maps its own).

    The Spark drivers the suite starts compile with the JVM's quick compiler only
    (``SUITE_JVM_OPTION``): its many short tests on small tables end before the optimising
    compiler pays back the processor time it takes, and on two cores that time is the
    other test worker's. Measured on the scan and server tests: 496 s of processor time
    instead of 646 s, 260 s instead of 330 s to run. Spark's results do not depend on it."""
    folder = tmp_path_factory.mktemp("cache-home")
    wanted = {
        "XDG_CACHE_HOME": str(folder),
        CLASS_ARCHIVE_ENV: "false",
        SUBMIT_OPTIONS: with_option(os.environ, SUITE_JVM_OPTION),
    }
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
