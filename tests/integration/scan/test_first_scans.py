"""First scans of a session, any number at once: the data source is registered once.

Spark refuses a second registration of a data source while the first is in
flight (``DATA_SOURCE_ALREADY_EXISTS``); the gateway lets concurrent first
scans of a session wait for one registration.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import connect_plugin
from connect_plugin.server.gateway import Gateway
from tests.integration.support import json_parts, new_session

SESSIONS = 3
SCANS_AT_ONCE = 4


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return json_parts(tmp_path_factory.mktemp("first-scans"), 4, 250)


def test_concurrent_first_scans_of_a_session_all_succeed(gateway: Gateway, data: Path) -> None:
    def count(spark: SparkSession, part: int) -> int:
        scan = connect_plugin.scan(spark, str(data), format="json")
        return scan.where(f"part = {part % 4}").count()

    for _ in range(SESSIONS):
        spark = new_session(gateway.address)
        try:
            with ThreadPoolExecutor(SCANS_AT_ONCE) as pool:
                counts = pool.map(count, [spark] * SCANS_AT_ONCE, range(SCANS_AT_ONCE))
                assert list(counts) == [250] * SCANS_AT_ONCE
            assert gateway.sessions is not None
            mine = spark.client._session_id
            held = [s for s in gateway.sessions.sessions() if s.session_id == mine]
            assert [s.server_side_session_id for s in held] == [spark.client._server_session_id]
        finally:
            spark.stop()
