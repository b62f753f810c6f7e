"""Spark's token and other secrets never reach a client through settings.

Spark Connect servers before 4.3 answer a Config read (``spark.conf.get``,
``getAll``) of a key set as a conf (``--conf``, ``spark-defaults.conf``) with
its value, Spark Connect's own ``spark.connect.authenticate.token`` and
``spark.hadoop.fs.s3a.secret.key`` included. Through the gateway every read
of a secret is redacted as Spark's SQL ``SET`` redacts it, on 4.0 and on the
newest server alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from connect_plugin.config import Config
from connect_plugin.server.embedded import EmbeddedSparkConnect
from connect_plugin.server.gateway import serve
from connect_plugin.server.statements.config_guard import REDACTED
from tests.integration.installs.test_compat import OLDEST, _environment
from tests.integration.installs.venvs import Dists, VenvCache
from tests.integration.support import TEST_SPARK_CONF, new_session

TOKEN_KEY = "spark.connect.authenticate.token"
TOKEN = "upstream-token-" + "k" * 32
S3_KEY = "spark.hadoop.fs.s3a.secret.key"
S3_SECRET = "s3-secret-" + "q" * 24
NEWEST = "newest"


@pytest.fixture(scope="module", params=[OLDEST, NEWEST])
def secret_server(
    request: pytest.FixtureRequest,
    venvs: VenvCache,
    dists: Dists,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, int]]:
    """A Spark Connect server started with its token and an S3 secret as confs: its
    version and port."""
    version: str = request.param
    home = python = None
    if version != NEWEST:
        install = _environment(venvs, dists, "pyspark", version)
        home, python = install.site_packages() / "pyspark", install.python
    root = tmp_path_factory.mktemp(f"secrets-{version}")
    conf = {**TEST_SPARK_CONF, TOKEN_KEY: TOKEN, S3_KEY: S3_SECRET}
    server = EmbeddedSparkConnect(
        conf_dir=None, extra_conf=conf, state_dir=root / "state", home=home, python=python
    )
    server.start()
    try:
        yield version, server.port
    finally:
        server.stop()


def _answers(spark: SparkSession) -> list[str]:
    """Every way a client reads settings, each answer (or error) as text."""
    reads: list[Callable[[], object]] = [
        lambda: spark.conf.get(TOKEN_KEY),
        lambda: spark.conf.get(S3_KEY),
        lambda: spark.conf.get(TOKEN_KEY, "default"),
        lambda: spark.conf.getAll,
        lambda: spark.sql(f"SET {TOKEN_KEY}").collect(),
        lambda: spark.sql("SET").collect(),
        lambda: spark.sql("SET -v").collect(),
    ]
    answers = []
    for read in reads:
        try:
            answers.append(repr(read()))
        except Exception as exc:
            answers.append(f"{type(exc).__name__}: {exc}")
    return answers


def test_secrets_set_as_confs_are_redacted_for_clients(
    secret_server: tuple[str, int], tmp_path: Path
) -> None:
    version, port = secret_server
    upstream = f"sc://localhost:{port}/;token={TOKEN}"
    if version == OLDEST:
        direct = SparkSession.builder.remote(upstream).create()
        try:
            assert direct.conf.get(TOKEN_KEY) == TOKEN, "Spark 4.0 itself answers with the token"
        finally:
            direct.stop()
    gateway = serve(Config(port=0, upstream=upstream, workspace=tmp_path / "ws", conf_dir=None))
    try:
        spark = new_session(gateway.address)
        try:
            answers = _answers(spark)
            assert spark.conf.get("spark.sql.shuffle.partitions") == "4"
            if version == OLDEST:
                assert spark.conf.get(TOKEN_KEY) == REDACTED
                assert spark.conf.getAll[S3_KEY] == REDACTED
        finally:
            spark.stop()
    finally:
        gateway.stop()
    leaked = [answer for answer in answers if TOKEN in answer or S3_SECRET in answer]
    assert leaked == []
