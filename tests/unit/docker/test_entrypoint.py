"""The image's entrypoint: what each role runs, and what its healthcheck probes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from connect_plugin.worker_python import launcher
from tests.image import ENTRYPOINT, load_entrypoint

entrypoint: Any = load_entrypoint()

ADDRESS = "10.214.14.9"


def _env(role: str, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "CONNECT_PLUGIN_ROLE": role, **extra}


def _option(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def _confs(argv: list[str]) -> dict[str, str]:
    pairs = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--conf"]
    return dict(pair.split("=", 1) for pair in pairs)


def test_every_role_and_only_those_are_known() -> None:
    assert entrypoint.ROLES == ("local", "master", "worker", "connect", "gateway")
    assert entrypoint.role_of({}) == "local"
    assert entrypoint.role_of({"CONNECT_PLUGIN_ROLE": "Worker"}) == "worker"
    with pytest.raises(entrypoint.EntrypointError, match=r"'driver' is not a role.*local, master"):
        entrypoint.role_of({"CONNECT_PLUGIN_ROLE": "driver"})


def test_unset_and_empty_settings_take_the_image_values() -> None:
    env = entrypoint.settings({"CONNECT_PLUGIN_WORKSPACE": "", "SPARK_WORKER_PORT": "9"}, "worker")
    assert env["CONNECT_PLUGIN_WORKSPACE"] == "/var/lib/connect-plugin/workspace"
    assert env["SPARK_WORKER_PORT"] == "9"
    assert "CONNECT_PLUGIN_UPSTREAM" not in env
    assert entrypoint.settings({}, "gateway")["CONNECT_PLUGIN_UPSTREAM"] == "sc://connect:15002"


def test_master_binds_and_advertises_the_host_address() -> None:
    launched = entrypoint.launch("master", _env("master", SPARK_LOCAL_IP=ADDRESS))
    home = Path(launched.env["SPARK_HOME"])
    assert launched.argv[:2] == [str(home / "bin" / "spark-class"), entrypoint.MASTER_CLASS]
    assert os.access(launched.argv[0], os.X_OK)
    assert _option(launched.argv, "--host") == ADDRESS
    assert _option(launched.argv, "--port") == "7077"
    assert launched.env["PYSPARK_PYTHON"] == launcher(sys.executable)
    assert launched.env["PYSPARK_DRIVER_PYTHON"] == launched.env["PYSPARK_PYTHON"]
    assert launched.beside == ()
    assert "SPARK_REMOTE" not in launched.env


def test_worker_registers_with_the_master_url(tmp_path: Path) -> None:
    env = _env(
        "worker",
        SPARK_LOCAL_IP=ADDRESS,
        SPARK_MASTER_URL="spark://10.214.14.2:7077",
        SPARK_WORKER_DIR=str(tmp_path / "work"),
        SPARK_REMOTE="sc://elsewhere:15002",
    )
    launched = entrypoint.launch("worker", env)
    assert launched.argv[1] == entrypoint.WORKER_CLASS
    assert launched.argv[-1] == "spark://10.214.14.2:7077"
    assert _option(launched.argv, "--host") == ADDRESS
    assert _option(launched.argv, "--work-dir") == str(tmp_path / "work")
    assert launched.folders == (tmp_path / "work",)
    assert "SPARK_REMOTE" not in launched.env


def test_connect_runs_the_driver_reachable_over_the_network(tmp_path: Path) -> None:
    (tmp_path / "spark-defaults.conf").write_text("spark.ui.enabled false\n")
    env = _env(
        "connect",
        SPARK_LOCAL_IP=ADDRESS,
        SPARK_MASTER_URL="spark://10.214.14.2:7077",
        SPARK_CONNECT_PORT="15010",
        CONNECT_PLUGIN_CONF_DIR=str(tmp_path),
        PYSPARK_PYTHON="/opt/python",
    )
    argv = entrypoint.launch("connect", env).argv
    assert Path(argv[0]).name == "spark-submit"
    assert _option(argv, "--class") == "org.apache.spark.sql.connect.service.SparkConnectServer"
    assert _option(argv, "--master") == "spark://10.214.14.2:7077"
    assert _option(argv, "--properties-file") == str(tmp_path / "spark-defaults.conf")
    confs = _confs(argv)
    assert confs["spark.driver.host"] == ADDRESS
    assert confs["spark.connect.grpc.binding.address"] == ADDRESS
    assert confs["spark.connect.grpc.binding.port"] == "15010"
    assert confs["spark.pyspark.python"] == confs["spark.pyspark.driver.python"] == "/opt/python"


@pytest.mark.parametrize("role", ["worker", "connect"])
def test_spark_roles_run_python_workers_from_bytecode_and_sweep_idle_ones(role: str) -> None:
    launched = entrypoint.launch(role, _env(role, SPARK_LOCAL_IP=ADDRESS))
    assert Path(launched.env["PYSPARK_PYTHON"]).name == "connect-plugin-python"
    assert launched.env["PYSPARK_DRIVER_PYTHON"] == launched.env["PYSPARK_PYTHON"]
    command = [sys.executable, "-m", "connect_plugin.cli", "stop-idle-python-workers"]
    assert list(launched.beside) == [*command, "--idle-s", "600"]
    quick = entrypoint.launch(
        role, _env(role, SPARK_LOCAL_IP=ADDRESS, CONNECT_PLUGIN_PYTHON_WORKER_IDLE_S="5")
    )
    assert _option(list(quick.beside), "--idle-s") == "5"
    never = _env(role, SPARK_LOCAL_IP=ADDRESS, CONNECT_PLUGIN_PYTHON_WORKER_IDLE_S="0")
    assert entrypoint.launch(role, never).beside == ()


@pytest.mark.parametrize("role", ["worker", "connect"])
def test_spark_roles_start_python_worker_daemons_from_the_fork_server(role: str) -> None:
    assert entrypoint.launch(role, _env(role, SPARK_LOCAL_IP=ADDRESS)).worker_forks
    off = _env(role, SPARK_LOCAL_IP=ADDRESS, CONNECT_PLUGIN_WORKER_FORKS="false")
    assert not entrypoint.launch(role, off).worker_forks
    bad = _env(role, SPARK_LOCAL_IP=ADDRESS, CONNECT_PLUGIN_WORKER_FORKS="sometimes")
    with pytest.raises(entrypoint.EntrypointError, match="CONNECT_PLUGIN_WORKER_FORKS='sometimes'"):
        entrypoint.launch(role, bad)


@pytest.mark.parametrize("role", ["master", "gateway", "local"])
def test_other_roles_start_no_fork_server(role: str) -> None:
    assert not entrypoint.launch(role, _env(role, SPARK_LOCAL_IP=ADDRESS)).worker_forks


@pytest.mark.parametrize(("value", "problem"), [("soon", "is not a number"), ("-1", "positive")])
def test_a_bad_idle_time_is_named(value: str, problem: str) -> None:
    env = _env("worker", SPARK_LOCAL_IP=ADDRESS, CONNECT_PLUGIN_PYTHON_WORKER_IDLE_S=value)
    with pytest.raises(entrypoint.EntrypointError, match=f"CONNECT_PLUGIN_PYTHON_WORKER_IDLE_S={value!r}.*{problem}"):
        entrypoint.launch("worker", env)


def test_connect_without_a_local_ip_listens_everywhere_and_advertises_its_host() -> None:
    argv = entrypoint.launch("connect", _env("connect")).argv
    confs = _confs(argv)
    assert confs["spark.connect.grpc.binding.address"] == "0.0.0.0"
    assert confs["spark.driver.host"] == socket.gethostbyname(socket.gethostname())
    assert "--properties-file" not in argv


@pytest.mark.parametrize(("role", "local"), [("gateway", False), ("local", True)])
def test_gateway_roles_run_the_cli(role: str, local: bool) -> None:
    launched = entrypoint.launch(role, _env(role), python="/opt/python")
    assert launched.argv[:4] == ["/opt/python", "-m", "connect_plugin.cli", "serve"]
    assert ("--local" in launched.argv) is local
    assert ("--no-class-archive" in launched.argv) is local
    assert launched.env["CONNECT_PLUGIN_HOST"] == "0.0.0.0"
    assert launched.folders == (Path("/var/lib/connect-plugin"),)


def test_a_bad_port_is_named() -> None:
    with pytest.raises(entrypoint.EntrypointError, match=r"SPARK_MASTER_PORT='x' is not a port"):
        entrypoint.launch("master", _env("master", SPARK_LOCAL_IP=ADDRESS, SPARK_MASTER_PORT="x"))


def test_without_java_the_error_says_what_to_install(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "CONNECT_PLUGIN_ROLE": "master"}
    result = subprocess.run(
        [sys.executable, str(ENTRYPOINT)], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert "no java was found" in result.stderr


def test_other_arguments_run_as_a_command() -> None:
    result = subprocess.run(
        [sys.executable, str(ENTRYPOINT), sys.executable, "-c", "print('ran')"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == "ran\n"


@pytest.mark.parametrize(
    ("role", "env", "expected"),
    [
        ("gateway", {}, ("127.0.0.1", 15002, True)),
        (
            "local",
            {"CONNECT_PLUGIN_HOST": ADDRESS, "CONNECT_PLUGIN_PORT": "1500"},
            (ADDRESS, 1500, True),
        ),
        ("connect", {"SPARK_LOCAL_IP": ADDRESS}, (ADDRESS, 15002, False)),
        ("master", {"SPARK_MASTER_HOST": "m", "SPARK_MASTER_PORT": "7"}, ("m", 7, False)),
        ("worker", {"SPARK_LOCAL_IP": ADDRESS}, (ADDRESS, 7078, False)),
    ],
)
def test_health_probes_where_the_role_listens(
    role: str, env: dict[str, str], expected: tuple[str, int, bool]
) -> None:
    probe = entrypoint.probe(role, {**env, "CONNECT_PLUGIN_CONF_DIR": "/nonexistent"})
    assert (probe.host, probe.port, probe.grpc_health) == expected


def test_a_closed_port_is_unhealthy() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    problem = entrypoint.check(entrypoint.Probe("127.0.0.1", port, grpc_health=False), timeout=1)
    assert problem is not None
    assert f"127.0.0.1:{port}" in problem


def test_a_listening_port_is_healthy() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        target = entrypoint.Probe("127.0.0.1", sock.getsockname()[1], grpc_health=False)
        assert entrypoint.check(target, timeout=1) is None


@pytest.fixture
def health_server() -> Iterator[tuple[int, health.HealthServicer]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield port, servicer
    finally:
        server.stop(None)


def test_grpc_health_reads_the_serving_status(
    health_server: tuple[int, health.HealthServicer],
) -> None:
    port, servicer = health_server
    target = entrypoint.Probe("127.0.0.1", port, grpc_health=True)
    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    assert entrypoint.check(target, timeout=2) == f"gRPC health of 127.0.0.1:{port}: NOT_SERVING"
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    assert entrypoint.check(target, timeout=2) is None


def test_health_command_exits_by_the_check(
    health_server: tuple[int, health.HealthServicer],
) -> None:
    port, servicer = health_server
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    env = {**os.environ, "CONNECT_PLUGIN_ROLE": "gateway", "CONNECT_PLUGIN_PORT": str(port)}
    env["CONNECT_PLUGIN_HOST"] = "127.0.0.1"
    command = [sys.executable, str(ENTRYPOINT), "health"]
    healthy = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert (healthy.returncode, healthy.stdout) == (0, "gateway: healthy\n")
    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    sick = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert sick.returncode == 1
    assert "NOT_SERVING" in sick.stdout
