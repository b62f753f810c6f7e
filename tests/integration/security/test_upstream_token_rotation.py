"""Rotating Spark Connect's token without restarting the gateway (``upstream_token_file``).

Spark reads its token once, at start: rotating it is restarting Spark with
a new one. The gateway reads Spark's token from a private file and re-reads
it on SIGHUP (``Gateway.reload_tokens``, which the CLI's SIGHUP calls): from
then on new upstream calls carry the new token, while a call in flight
finishes with the one it started with; a bad file keeps the old token.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.errors.exceptions.connect import SparkConnectGrpcException
from pyspark.sql import SparkSession

from connect_plugin.config import Config
from connect_plugin.server.embedded import EmbeddedSparkConnect, free_port
from connect_plugin.server.gateway import serve
from tests.integration.support import TEST_SPARK_CONF, new_session

FIRST = "first-" + secrets.token_urlsafe(24)
SECOND = "second-" + secrets.token_urlsafe(24)
SLOW_ROWS = 12
SLOW_QUERY = (
    "SELECT id, reflect('java.lang.Thread', 'sleep', CAST(300 AS BIGINT)) AS slept "
    f"FROM range(0, {SLOW_ROWS}, 1, {SLOW_ROWS})"
)
"""One call whose rows stream for seconds, a partition at a time (two cores: 300 ms each two
partitions): once its first row is here the call is in flight, and stays so after."""


def _spark(root: Path, port: int, token: str) -> EmbeddedSparkConnect:
    return EmbeddedSparkConnect(
        conf_dir=None, port=port, extra_conf=TEST_SPARK_CONF, state_dir=root, token=token
    )


def _write(path: Path, text: str, mode: int = 0o600) -> None:
    path.write_text(text)
    os.chmod(path, mode)


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def first_spark(tmp_path: Path, port: int) -> Iterator[EmbeddedSparkConnect]:
    server = _spark(tmp_path / "spark-1", port, FIRST)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _works(spark: SparkSession) -> int:
    return spark.range(3).count()


def test_sighup_takes_a_new_spark_token_and_calls_in_flight_finish(
    first_spark: EmbeddedSparkConnect,
    port: int,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("DEBUG")
    token_file = tmp_path / "spark-token"
    _write(token_file, FIRST + "\n")
    config = Config(
        port=0,
        upstream=f"sc://127.0.0.1:{port}",
        upstream_token_file=token_file,
        workspace=tmp_path / "ws",
        conf_dir=None,
    )
    gateway = serve(config)
    try:
        spark = new_session(gateway.address)
        try:
            assert _works(spark) == 3
            streaming = spark.sql(SLOW_QUERY).toLocalIterator()
            first = next(streaming)
            _write(token_file, SECOND + "\n")
            assert gateway.reload_tokens()
            rest = list(streaming)
            assert [row.id for row in [first, *rest]] == list(range(SLOW_ROWS))
            with pytest.raises(SparkConnectGrpcException, match=r"UNAUTHENTICATED"):
                _works(spark)
        finally:
            spark.stop()
        first_spark.stop()
        second = _spark(tmp_path / "spark-2", port, SECOND)
        second.start()
        try:
            spark = new_session(gateway.address)
            try:
                assert _works(spark) == 3
                _write(token_file, FIRST + "\n", mode=0o644)
                assert not gateway.reload_tokens()
                assert _works(spark) == 3
            finally:
                spark.stop()
        finally:
            second.stop()
    finally:
        gateway.stop()
    assert "re-read the upstream token file" in caplog.text
    assert "kept the previous upstream token" in caplog.text
    assert FIRST not in caplog.text
    assert SECOND not in caplog.text
