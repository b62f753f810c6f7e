"""The round-trip property's fixture (its line in the session's summary: tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from connect_plugin.server.gateway import Gateway
from tests.integration.temp_tables.roundtrip_check import STATS, RoundTrip, Tally


@pytest.fixture
def round_trip(
    spark: SparkSession, gateway: Gateway, workspace: Path, request: pytest.FixtureRequest
) -> RoundTrip:
    spark.conf.set("spark.sql.timeType.enabled", "true")
    tally = Tally(request.node.name)
    request.config.stash.setdefault(STATS, []).append(tally)
    return RoundTrip(spark, gateway, workspace, tally)

