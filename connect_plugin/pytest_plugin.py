"""pytest fixtures for projects that test their own code against a connect-plugin gateway.

Installed with the package (a ``pytest11`` entry point), so any project that
has connect-plugin installed can ask for:

- ``connect_plugin_remote``: the ``sc://`` address of a gateway, once per run.
  ``SPARK_REMOTE`` when it is set (a gateway someone else runs, e.g. a CI
  service); otherwise an embedded Spark Connect server and a gateway started
  on free loopback ports, with their state in the run's temp folder, and
  stopped when the run ends (this needs the server install and Java 17).
- ``connect_plugin_spark``: one SparkSession through that gateway for the
  whole run, stopped at the end (which drops its temporary tables).
- ``connect_plugin_test_spark``: the same SparkSession for one test; the
  temporary tables the test creates are dropped when it ends, so tests do not
  see each other's tables.

pytest loads this module in every run of an environment that has the package,
so it imports nothing beyond pytest until a fixture is used.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession

REMOTE_ENV = "SPARK_REMOTE"


@pytest.fixture(scope="session")
def connect_plugin_remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The gateway's ``sc://`` address: ``SPARK_REMOTE``, else an embedded stack of our own."""
    remote = os.environ.get(REMOTE_ENV)
    if remote:
        yield remote
        return
    from connect_plugin.config import Config
    from connect_plugin.errors import ConnectPluginError
    from connect_plugin.extras import require_server

    try:
        require_server()
    except ConnectPluginError as exc:
        pytest.fail(f"{exc}; or set {REMOTE_ENV} to a running gateway", pytrace=False)
    from connect_plugin.server.stack import Stack

    root = tmp_path_factory.mktemp("connect-plugin")
    config = Config(local=True, port=0, workspace=root / "workspace", state_dir=root / "state")
    stack = Stack(config)
    try:
        stack.start()
    except ConnectPluginError as exc:
        pytest.fail(f"could not start the embedded gateway: {exc}", pytrace=False)
    try:
        assert stack.gateway is not None
        yield stack.gateway.address
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def connect_plugin_spark(connect_plugin_remote: str) -> Iterator[SparkSession]:
    """One Spark Connect session through the gateway for the whole run."""
    from connect_plugin.extras import require_spark_client

    require_spark_client()
    from pyspark.sql.connect.session import SparkSession

    spark = SparkSession.builder.remote(connect_plugin_remote).create()
    try:
        yield spark
    finally:
        spark.stop()


@pytest.fixture
def connect_plugin_test_spark(connect_plugin_spark: SparkSession) -> Iterator[SparkSession]:
    """The run's session for one test; temporary tables the test creates go with it."""
    import connect_plugin

    before = _temp_table_names(connect_plugin_spark)
    yield connect_plugin_spark
    for name in sorted(_temp_table_names(connect_plugin_spark) - before):
        connect_plugin.drop_temp_table(connect_plugin_spark, name, if_exists=True)


def _temp_table_names(spark: SparkSession) -> set[str]:
    import connect_plugin

    return {row["name"] for row in connect_plugin.temp_tables(spark).collect()}
