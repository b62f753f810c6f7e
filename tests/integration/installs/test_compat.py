"""Spark 4.0-4.3 on both ends: each client version through the gateway, in front of each server.

Every client and server is a fresh install of the built wheel (``[client]``
with pyspark-client, ``[server]`` with full pyspark, which is also the full
pyspark client). A server is started from its own install, its Python
workers on its own interpreter (so the scan runs on that server's pyspark),
behind two gateways: the test session's (the newest pyspark) and one run by
the server's own install (``connect-plugin serve --upstream``). The oldest
versions are installed with every other dependency at the lower end of its
range too.

By default (and in CI) the ends run: the oldest client and server, and the
newest, i.e. what ``[client]`` and ``[server]`` resolve to today (the thin
client of test_thin_client.py, the test session's own server and gateway).
``./dev compat`` (``--compat=all``) runs every client against every server.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.version import Version

import connect_plugin
from connect_plugin.config import Config
from connect_plugin.server.embedded import EmbeddedSparkConnect
from connect_plugin.server.gateway import Gateway, serve
from connect_plugin.spark_processes.python_daemons import daemons
from tests.integration.installs.api_check import assert_api_works
from tests.integration.installs.requirements import (
    lower_end,
    lowest_constraints,
    pinned,
)
from tests.integration.installs.venvs import Dists, Venv, VenvCache, clean_env
from tests.integration.support import TEST_SPARK_CONF, new_session

SERVERS = ("4.0.0", "4.1.4", "4.2.1", "4.3.0")
CLIENTS = (
    "pyspark-client 4.0.0",
    "pyspark-client 4.1.3",
    "pyspark-client 4.2.0",
    "pyspark 4.0.0",
    "pyspark 4.1.4",
    "pyspark 4.2.1",
    "pyspark 4.3.0",
)
OLDEST = "4.0.0"
SESSION_SERVER = "newest (the test session's)"
ENDS_SERVERS = (OLDEST, SESSION_SERVER)
ENDS_CLIENTS = ("pyspark-client 4.0.0",)
"""The default run: the oldest client on the oldest and the newest server; the newest client
on the oldest server is test_the_newest_client_on_the_oldest_server. Full pyspark 4.0.0 as a
client runs in test_the_servers_own_install_runs_the_gateway, and the newest client on the
newest server is the rest of the test suite."""

READY_PREFIX = "connect-plugin gateway ready at "
GATEWAY_START_TIMEOUT_S = 120.0
GATEWAY_STOP_TIMEOUT_S = 60.0


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Servers are parametrized on their own, in one order for every test, so that pytest
    runs the tests of one server together and starts each server once."""
    every = metafunc.config.getoption("--compat") == "all"
    name = metafunc.function.__name__
    if name == "test_a_client_through_the_gateway":
        metafunc.parametrize("server", SERVERS if every else ENDS_SERVERS, indirect=True, scope="module")
        metafunc.parametrize("client", CLIENTS if every else ENDS_CLIENTS)
    elif name == "test_the_servers_own_install_runs_the_gateway":
        metafunc.parametrize("server", SERVERS if every else (OLDEST,), indirect=True, scope="module")
    elif name == "test_the_servers_python_workers_load_pyspark_from_bytecode":
        metafunc.parametrize("server", ENDS_SERVERS, indirect=True, scope="module")
    elif name == "test_the_newest_client_on_the_oldest_server":
        metafunc.parametrize("server", (OLDEST,), indirect=True, scope="module")


def _environment(venvs: VenvCache, dists: Dists, package: str, version: str) -> Venv:
    """pyspark X gets the [server] install (which holds the full client); pyspark-client X
    gets the [client] install. The oldest get the lower end of every other range too."""
    extra = "server" if package == "pyspark" else "client"
    spark = "pyspark[connect]" if package == "pyspark" else package
    venv = venvs.get(
        f"{package} {version} [{extra}]" + (", lowest dependencies" if version == OLDEST else ""),
        f"{dists.wheel}[{extra}]",
        f"{spark}=={version}",
        constraints=lowest_constraints((extra,)) if version == OLDEST else (),
    )
    assert venv.distributions()[package] == version
    return venv


@dataclass
class ServerUnderTest:
    version: str
    gateway: str
    """The test session's gateway (newest pyspark) in front of this server."""
    own_gateway: str | None = None
    """A gateway run by the server's own install."""
    install: Venv | None = None


@pytest.fixture(scope="module")
def server(
    request: pytest.FixtureRequest,
    venvs: VenvCache,
    dists: Dists,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ServerUnderTest]:
    version: str = request.param
    if version == SESSION_SERVER:
        request.getfixturevalue("upstream")
        gateway: Gateway = request.getfixturevalue("gateway")
        yield ServerUnderTest(version, gateway.address)
        return
    install = _environment(venvs, dists, "pyspark", version)
    root = tmp_path_factory.mktemp(f"spark-{version}")
    spark = EmbeddedSparkConnect(
        conf_dir=None,
        extra_conf=TEST_SPARK_CONF,
        state_dir=root / "state",
        home=install.site_packages() / "pyspark",
        python=install.python,
    )
    spark.start()
    ours: Gateway | None = None
    theirs: subprocess.Popen[str] | None = None
    try:
        ours = serve(Config(port=0, upstream=spark.address, workspace=root / "ws", conf_dir=None))
        theirs, own_address = _own_gateway(install, spark.address, root)
        yield ServerUnderTest(version, ours.address, own_address, install)
    finally:
        if theirs is not None:
            _stop(theirs)
        if ours is not None:
            ours.stop()
        spark.stop()


def _own_gateway(install: Venv, upstream: str, root: Path) -> tuple[subprocess.Popen[str], str]:
    """``connect-plugin serve --upstream`` from the server's install; its ready line's address."""
    with (root / "own-gateway.log").open("w") as log:
        process = subprocess.Popen(
            [
                str(install.bin / "connect-plugin"), "serve", "--upstream", upstream,
                "--port", "0", "--workspace", str(root / "own-ws"),
                "--state-dir", str(root / "own-state"),
            ],
            stdout=subprocess.PIPE, stderr=log, text=True, env=clean_env(), cwd=root,
        )
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    if not selector.select(GATEWAY_START_TIMEOUT_S):
        _stop(process)
        pytest.fail(f"the gateway of {install.path} did not start; see {root / 'own-gateway.log'}")
    line = process.stdout.readline().strip()
    if not line.startswith(READY_PREFIX):
        _stop(process)
        pytest.fail(f"unexpected first line {line!r}; see {root / 'own-gateway.log'}")
    return process, line.removeprefix(READY_PREFIX)


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(GATEWAY_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
    if process.stdout is not None:
        process.stdout.close()


def test_the_matrix_spans_the_pinned_ranges() -> None:
    for package in ("pyspark", "pyspark-client"):
        (requirement,) = [r for r in pinned(("client", "server")) if r.name == package]
        assert Version(lower_end(requirement)) == Version(OLDEST), package
        versions = [c.split()[1] for c in CLIENTS if c.split()[0] == package]
        assert all(v in requirement.specifier for v in versions), (package, requirement)
        if package == "pyspark":
            assert all(v in requirement.specifier for v in SERVERS), requirement


def test_a_client_through_the_gateway(
    server: ServerUnderTest, client: str, venvs: VenvCache, dists: Dists, scan_data: Path
) -> None:
    package, version = client.split()
    install = _environment(venvs, dists, package, version)
    assert_api_works(install, server.gateway, scan_data)


def test_the_newest_client_on_the_oldest_server(
    server: ServerUnderTest, thin_client: Venv, scan_data: Path
) -> None:
    assert_api_works(thin_client, server.gateway, scan_data)


def test_the_servers_own_install_runs_the_gateway(
    server: ServerUnderTest, scan_data: Path
) -> None:
    assert server.install is not None
    assert server.own_gateway is not None
    assert_api_works(server.install, server.own_gateway, scan_data)


def test_the_session_server_is_the_newest_in_the_matrix() -> None:
    import pyspark

    assert Version(pyspark.__version__) >= Version(SERVERS[-1])


def test_the_servers_python_workers_load_pyspark_from_bytecode(
    server: ServerUnderTest, scan_data: Path
) -> None:
    """Spark puts its bytecode-less ``pyspark.zip`` first on the workers' path; the
    ``connect-plugin-python`` launcher of the server's install takes it off, so every
    Python worker of a scan (the data source's creation, its read planning, its
    readers) imports pyspark from the install's site-packages. A daemon the fork server
    forked runs with the server's own path, which has no zip."""
    spark = new_session(server.gateway)
    try:
        assert connect_plugin.scan(spark, str(scan_data / "logs"), format="json").count() == 4
        mine = spark.client._server_session_id
        paths = {
            _module(d.pid): _python_path(d.forked or d.pid) for d in daemons() if d.session == mine
        }
    finally:
        spark.stop()
    assert set(SCAN_WORKERS) <= set(paths), paths
    assert all(path is not None and "pyspark.zip" not in path for path in paths.values()), paths


SCAN_WORKERS = (
    "pyspark.sql.worker.create_data_source",
    "pyspark.sql.worker.plan_data_source_read",
    "pyspark.worker",
)


def _module(pid: int) -> str:
    """The worker module a daemon runs (``[python [launcher]] -m pyspark.daemon <module>``)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    if b"pyspark.daemon" not in argv[:-1]:
        return ""
    return argv[argv.index(b"pyspark.daemon") + 1].decode()


def _python_path(pid: int) -> str | None:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    found = [v for v in environ if v.startswith(b"PYTHONPATH=")]
    return found[0].decode().removeprefix("PYTHONPATH=") if found else ""
