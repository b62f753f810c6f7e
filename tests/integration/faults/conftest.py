"""A gateway process per test, in front of the session's one Spark Connect server."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.integration.faults.gateway_process import GatewayProcess, running_gateway
from tests.integration.support import Upstream, new_session


@pytest.fixture
def gateway_process(upstream: Upstream, tmp_path: Path) -> Iterator[GatewayProcess]:
    with running_gateway(upstream.address, tmp_path) as process:
        yield process


@pytest.fixture
def open_session(gateway_process: GatewayProcess) -> Iterator[Callable[[], SparkSession]]:
    """Opens client sessions through the gateway; the ones still open are stopped at the end."""
    opened: list[SparkSession] = []

    def open_one() -> SparkSession:
        opened.append(new_session(gateway_process.address))
        return opened[-1]

    try:
        yield open_one
    finally:
        _stop_all(opened, gateway_process)


@pytest.fixture
def clone_session(
    gateway_process: GatewayProcess,
) -> Iterator[Callable[..., SparkSession]]:
    """``spark.cloneSession()`` through the gateway; clones still open are stopped at the end."""
    clones: list[SparkSession] = []

    def clone(spark: SparkSession, new_session_id: str | None = None) -> SparkSession:
        clones.append(spark.cloneSession(new_session_id))
        return clones[-1]

    try:
        yield clone
    finally:
        _stop_all(clones, gateway_process)


def _stop_all(sessions: list[SparkSession], gateway: GatewayProcess) -> None:
    running = gateway.running
    for session in sessions:
        if not session.is_stopped:
            # With the gateway down a release would be retried for minutes.
            session.release_session_on_close = running
            with contextlib.suppress(Exception):
                session.stop()
