"""The round-trip property's fixture and its line in the session's summary."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from connect_plugin.server.gateway import Gateway
from tests.integration.temp_tables.roundtrip_check import STATS, RoundTrip, Tally, summary


@pytest.fixture
def round_trip(
    spark: SparkSession, gateway: Gateway, workspace: Path, request: pytest.FixtureRequest
) -> RoundTrip:
    spark.conf.set("spark.sql.timeType.enabled", "true")
    tally = Tally(request.node.name)
    request.config.stash.setdefault(STATS, []).append(tally)
    return RoundTrip(spark, gateway, workspace, tally)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = summary(terminalreporter.config)
    if lines:
        terminalreporter.section("round trips")
        for line in lines:
            terminalreporter.write_line(line)
