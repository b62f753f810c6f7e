"""One client session per scan test module.

Spark starts Python workers per Spark Connect session, so the first scan of
a session costs seconds; the scan tests share a session per module and
never change its settings.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from connect_plugin.server.gateway import Gateway
from tests.integration.support import new_session


@pytest.fixture(scope="module")
def spark(gateway: Gateway) -> Iterator[SparkSession]:
    session = new_session(gateway.address)
    try:
        yield session
    finally:
        session.stop()
