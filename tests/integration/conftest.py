"""One real Spark Connect server and one gateway for the whole test session.

``SPARK_REMOTE=sc://host:port`` reuses a running Spark Connect server instead
of starting one (the tests that need the server's own settings then skip).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from connect_plugin.server.embedded import EmbeddedSparkConnect
from connect_plugin.server.gateway import Gateway
from tests.integration.support import TEST_SPARK_CONF, Upstream, new_session, serving


@pytest.fixture(scope="session")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    remote = os.environ.get("SPARK_REMOTE")
    if remote:
        yield Upstream(remote, embedded=False)
        return
    spark_dir = tmp_path_factory.mktemp("spark")
    conf = {**TEST_SPARK_CONF, "spark.sql.warehouse.dir": str(spark_dir / "warehouse")}
    server = EmbeddedSparkConnect(
        conf_dir=None, extra_conf=conf, log_path=spark_dir / "spark-connect.log"
    )
    server.start()
    try:
        yield Upstream(server.address, embedded=True, log_path=spark_dir / "spark-connect.log")
    finally:
        server.stop()


@pytest.fixture(scope="session")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("workspace")


@pytest.fixture(scope="session")
def gateway(upstream: Upstream, workspace: Path) -> Iterator[Gateway]:
    with serving(upstream, workspace) as running:
        yield running


def _session_at(address: str) -> Iterator[SparkSession]:
    session = new_session(address)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def spark(gateway: Gateway) -> Iterator[SparkSession]:
    """A client session through the gateway."""
    yield from _session_at(gateway.address)


@pytest.fixture
def direct(upstream: Upstream) -> Iterator[SparkSession]:
    """A client session straight to Spark Connect, for side-by-side comparisons."""
    yield from _session_at(upstream.address)


@pytest.fixture
def unique_name() -> str:
    return f"t_{uuid.uuid4().hex[:10]}"
