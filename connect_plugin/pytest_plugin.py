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
- ``connect_plugin_test_spark``: a SparkSession for one test, chosen by the
  isolation setting (``--connect-plugin-isolation`` or the ini option
  ``connect_plugin_isolation``): ``run`` (the default) gives the run's session,
  ``module`` a session of the test's module, ``test`` a fresh session stopped
  after the test. In ``run`` and ``module`` the test's traces in the shared
  session are undone when it ends: temporary tables and temporary views it
  made are dropped, session settings it set, changed or unset are put back,
  and the current catalog and database are restored; so no test sees
  another's.
- ``connect_plugin_scoped_spark``: that session at its own scope, for fixtures
  that prepare what the tests sharing it may see (made before a test starts,
  so it is kept).
- ``connect_plugin_data_path``: a fresh folder for files a test writes and the
  gateway's Spark reads (scans): pytest's ``tmp_path``, or, when
  ``CONNECT_PLUGIN_DATA_DIR`` names the folder a gateway's container mounts at
  the same path, a folder in it that the container's user can read.

pytest loads this module in every run of an environment that has the package,
so it imports nothing beyond pytest until a fixture is used.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pytest

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession

REMOTE_ENV = "SPARK_REMOTE"
DATA_DIR_ENV = "CONNECT_PLUGIN_DATA_DIR"
SHARED_FOLDER_MODE = 0o755
"""pytest's own folders are private to the test's user; a gateway in a container runs as another."""
ISOLATION_OPTION = "connect_plugin_isolation"
Scope = Literal["session", "module", "function"]
ISOLATION_SCOPES: dict[str, Scope] = {"run": "session", "module": "module", "test": "function"}
"""Isolation setting -> pytest scope of the session ``connect_plugin_test_spark`` hands out."""
DEFAULT_ISOLATION = "run"
REDACTED = "*********(redacted)"
"""What the gateway shows instead of a secret setting's value: a value that cannot be put back."""


def pytest_addoption(parser: pytest.Parser) -> None:
    choices = ", ".join(ISOLATION_SCOPES)
    help_text = (
        "Spark session of connect_plugin_test_spark: run (the run's session), module (one per "
        "test module) or test (a fresh one per test); what a test leaves in a shared session "
        f"is undone after it ({choices}; default {DEFAULT_ISOLATION})"
    )
    parser.addini(ISOLATION_OPTION, help_text, default=DEFAULT_ISOLATION)
    parser.addoption(
        "--connect-plugin-isolation", dest=ISOLATION_OPTION, choices=list(ISOLATION_SCOPES),
        default=None, help=help_text,
    )


def _isolation(config: pytest.Config) -> str:
    chosen = config.getoption(ISOLATION_OPTION) or config.getini(ISOLATION_OPTION)
    if chosen not in ISOLATION_SCOPES:
        raise pytest.UsageError(
            f"{ISOLATION_OPTION} = {chosen!r}: choose one of {', '.join(ISOLATION_SCOPES)}"
        )
    return str(chosen)


def _isolation_scope(fixture_name: str, config: pytest.Config) -> Scope:
    return ISOLATION_SCOPES[_isolation(config)]


@pytest.fixture(scope="session")
def connect_plugin_remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The gateway's ``sc://`` address: ``SPARK_REMOTE``, else an embedded stack of our own
    (without a JVM class archive: a CI runner starts with an empty cache, where writing one
    would only make the start and the stop slower)."""
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
    config = Config(
        local=True,
        port=0,
        workspace=root / "workspace",
        state_dir=root / "state",
        class_archive=False,
    )
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
    with _new_session(connect_plugin_remote) as spark:
        yield spark


@pytest.fixture(scope=_isolation_scope)
def connect_plugin_scoped_spark(
    request: pytest.FixtureRequest, connect_plugin_remote: str
) -> Iterator[SparkSession]:
    """The session ``connect_plugin_test_spark`` hands out, at its own scope (run, module or
    test): for fixtures that prepare what the tests sharing the session may use."""
    if _isolation(request.config) == "run":
        yield request.getfixturevalue("connect_plugin_spark")
        return
    with _new_session(connect_plugin_remote) as spark:
        yield spark


@pytest.fixture
def connect_plugin_test_spark(
    request: pytest.FixtureRequest, connect_plugin_scoped_spark: SparkSession
) -> Iterator[SparkSession]:
    """A session for one test, in which the test sees nothing an earlier test left behind."""
    spark = connect_plugin_scoped_spark
    if _isolation(request.config) == "test":
        yield spark
        return
    before = SessionState.of(spark)
    yield spark
    before.restore(spark)


@pytest.fixture
def connect_plugin_data_path(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A fresh folder for files the gateway's Spark must read, at the same path as here."""
    shared = os.environ.get(DATA_DIR_ENV)
    if not shared:
        return tmp_path
    Path(shared).mkdir(parents=True, exist_ok=True)
    prefix = "".join(c if c.isalnum() else "_" for c in request.node.name)[:40] + "-"
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=shared))
    path.chmod(SHARED_FOLDER_MODE)
    return path


@contextmanager
def _new_session(remote: str) -> Iterator[SparkSession]:
    """A Spark Connect session through the gateway, stopped (its temporary tables with it) after."""
    from connect_plugin.extras import require_spark_client

    require_spark_client()
    from pyspark.sql.connect.session import SparkSession

    spark = SparkSession.builder.remote(remote).create()
    try:
        yield spark
    finally:
        spark.stop()


@dataclass(frozen=True)
class SessionState:
    """What a test may change in a shared session and what putting it back needs."""

    temp_tables: frozenset[str]
    temp_views: frozenset[str]
    settings: dict[str, str]
    catalog: str
    database: str

    @classmethod
    def of(cls, spark: SparkSession) -> SessionState:
        import connect_plugin

        return cls(
            temp_tables=frozenset(r["name"] for r in connect_plugin.temp_tables(spark).collect()),
            temp_views=_temp_views(spark),
            settings=dict(spark.conf.getAll),
            catalog=spark.catalog.currentCatalog(),
            database=spark.catalog.currentDatabase(),
        )

    def restore(self, spark: SparkSession) -> None:
        """Undo what happened since this state was taken: in this order, since a temp table
        is also a temp view (which only the plugin may drop) and a database may be gone."""
        import connect_plugin

        if spark.catalog.currentCatalog() != self.catalog:
            spark.catalog.setCurrentCatalog(self.catalog)
        if spark.catalog.currentDatabase() != self.database:
            spark.catalog.setCurrentDatabase(self.database)
        now = SessionState.of(spark)
        for name in sorted(now.temp_tables - self.temp_tables):
            connect_plugin.drop_temp_table(spark, name, if_exists=True)
        for name in sorted(_temp_views(spark) - self.temp_views):
            spark.catalog.dropTempView(name)
        for key in sorted(now.settings.keys() - self.settings.keys()):
            spark.conf.unset(key)
        for key, value in sorted(self.settings.items()):
            if now.settings.get(key) != value and value != REDACTED:
                spark.conf.set(key, value)


def _temp_views(spark: SparkSession) -> frozenset[str]:
    return frozenset(r["viewName"] for r in spark.sql("SHOW VIEWS").collect() if r["isTemporary"])
