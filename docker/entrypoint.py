"""Entrypoint of the connect-plugin image: one role per container (or per host).

``CONNECT_PLUGIN_ROLE`` names the role:

- ``local``: the embedded Spark Connect server and the gateway in one
  container (``connect-plugin serve --local``), for a project's own CI;
- ``master`` and ``worker``: Spark's standalone cluster manager, from the
  ``spark-class`` launcher inside the pyspark wheel;
- ``connect``: a Spark Connect server whose driver runs here and whose
  executors run on the workers of ``SPARK_MASTER_URL``;
- ``gateway``: the connect-plugin gateway in front of ``CONNECT_PLUGIN_UPSTREAM``.

``entrypoint.py`` starts the role in the foreground (it replaces itself with
the role's process, so signals reach it); ``entrypoint.py health`` exits 0
when the role answers (gRPC health for the gateway, the port for the rest);
any other arguments are run as a command. The ``worker`` and ``connect``
roles run Spark's Python workers through ``connect-plugin-python`` (pyspark
from bytecode) and keep a sweeper beside the role's process that stops
Python worker daemons idle for ``CONNECT_PLUGIN_PYTHON_WORKER_IDLE_S``
seconds (``0``: never), as Spark keeps every session's daemons until it
stops; they also start those daemons from a fork server that has pyspark,
pyarrow and the scan loaded (``CONNECT_PLUGIN_WORKER_FORKS=false``: a new
interpreter each). Every path and default the image
fixes is an environment variable whose default is the image's value, so the
same script runs one role per network namespace in the cluster tests.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from connect_plugin.errors import ConnectPluginError

ROLES = ("local", "master", "worker", "connect", "gateway")
HEALTH_COMMAND = "health"
HEALTH_TIMEOUT_S = 3.0
WILDCARD_ADDRESSES = ("", "0.0.0.0", "::")
LOOPBACK = "127.0.0.1"

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"

IMAGE_DEFAULTS: Mapping[str, str] = {
    "CONNECT_PLUGIN_ROLE": "local",
    "CONNECT_PLUGIN_CONF_DIR": "/opt/connect-plugin/conf",
    "CONNECT_PLUGIN_WORKSPACE": "/var/lib/connect-plugin/workspace",
    "CONNECT_PLUGIN_HOST": "0.0.0.0",
    "CONNECT_PLUGIN_PORT": "15002",
    "SPARK_MASTER_URL": "spark://master:7077",
    "SPARK_MASTER_PORT": "7077",
    "SPARK_MASTER_WEBUI_PORT": "8080",
    "SPARK_WORKER_PORT": "7078",
    "SPARK_WORKER_WEBUI_PORT": "8081",
    "SPARK_WORKER_DIR": "/var/lib/connect-plugin/work",
    "SPARK_CONNECT_PORT": "15002",
    "CONNECT_PLUGIN_PYTHON_WORKER_IDLE_S": "600",
    "CONNECT_PLUGIN_WORKER_FORKS": "true",
}
"""Environment variable -> the image's value, used where the variable is unset or empty."""

GATEWAY_DEFAULTS: Mapping[str, str] = {"CONNECT_PLUGIN_UPSTREAM": "sc://connect:15002"}
"""Defaults only the ``gateway`` role takes (``local`` has no upstream)."""


class EntrypointError(Exception):
    """The role cannot start as configured; the message says which variable to set."""


@dataclass(frozen=True)
class Launch:
    """What a role runs: the command, its environment, and folders it needs."""

    argv: list[str]
    env: dict[str, str]
    folders: tuple[Path, ...] = ()
    beside: tuple[str, ...] = ()
    """A command run for as long as the role's process lives (it is told that pid)."""
    worker_forks: bool = False
    """Start Spark's Python worker daemons from a fork server beside the role's process."""


@dataclass(frozen=True)
class Probe:
    """What ``health`` checks for a role."""

    host: str
    port: int
    grpc_health: bool


def settings(environ: Mapping[str, str], role: str) -> dict[str, str]:
    """The process environment with the image's defaults filled in where unset."""
    env = dict(environ)
    defaults = {**IMAGE_DEFAULTS, **(GATEWAY_DEFAULTS if role == "gateway" else {})}
    for key, value in defaults.items():
        if not env.get(key):
            env[key] = value
    return env


def role_of(environ: Mapping[str, str]) -> str:
    role = (environ.get("CONNECT_PLUGIN_ROLE") or IMAGE_DEFAULTS["CONNECT_PLUGIN_ROLE"]).lower()
    if role not in ROLES:
        raise EntrypointError(
            f"CONNECT_PLUGIN_ROLE={role!r} is not a role of this image; use one of "
            + ", ".join(ROLES)
        )
    return role


def local_address(env: Mapping[str, str]) -> str:
    """The address this host's Spark processes bind and advertise to the others.

    ``SPARK_LOCAL_IP`` when set (Spark reads it too); otherwise the address the
    host name resolves to, which in a container is the container's own address
    on its network. Spark would pick the same one by itself; naming it here
    lets ``health`` probe exactly what Spark bound.
    """
    return env.get("SPARK_LOCAL_IP") or socket.gethostbyname(socket.gethostname())


def _port(env: Mapping[str, str], key: str) -> int:
    raw = env[key]
    try:
        port = int(raw)
    except ValueError:
        raise EntrypointError(f"{key}={raw!r} is not a port number") from None
    if not 0 < port < 65536:
        raise EntrypointError(f"{key}={raw!r} is outside 1..65535")
    return port


def _gateway_argv(python: str, role: str) -> list[str]:
    """The gateway's command; the local role's embedded JVM keeps no class archive: a
    container starts with an empty home, so it would write one at every stop and map none."""
    argv = [python, "-m", "connect_plugin.cli", "serve"]
    return [*argv, "--local", "--no-class-archive"] if role == "local" else argv


def _spark_env(env: MutableMapping[str, str], python: str) -> None:
    """What every Spark process of the image needs: its home, Java, and one Python (through
    its launcher, which loads pyspark from bytecode)."""
    from connect_plugin.server.embedded import find_java, spark_home
    from connect_plugin.worker_python import launcher

    java, _ = find_java(env)
    env.setdefault("SPARK_HOME", str(spark_home()))
    env.setdefault("JAVA_HOME", str(java.resolve().parents[1]))
    env.setdefault("PYSPARK_PYTHON", launcher(python))
    env.setdefault("PYSPARK_DRIVER_PYTHON", env["PYSPARK_PYTHON"])
    env["SPARK_CONNECT_MODE"] = "0"
    env.pop("SPARK_REMOTE", None)


def launch(role: str, environ: Mapping[str, str], python: str = sys.executable) -> Launch:
    """The command that runs ``role`` in the foreground, with its environment."""
    env = settings(environ, role)
    if role in ("local", "gateway"):
        workspace = Path(env["CONNECT_PLUGIN_WORKSPACE"])
        return Launch(_gateway_argv(python, role), env, (workspace.parent,))
    _spark_env(env, python)
    home = Path(env["SPARK_HOME"])
    address = local_address(env)
    if role == "master":
        argv = [str(home / "bin" / "spark-class"), MASTER_CLASS]
        argv += ["--host", env.get("SPARK_MASTER_HOST") or address]
        argv += ["--port", str(_port(env, "SPARK_MASTER_PORT"))]
        argv += ["--webui-port", str(_port(env, "SPARK_MASTER_WEBUI_PORT"))]
        return Launch(argv, env)
    if role == "worker":
        work = Path(env["SPARK_WORKER_DIR"])
        argv = [str(home / "bin" / "spark-class"), WORKER_CLASS, "--host", address]
        argv += ["--port", str(_port(env, "SPARK_WORKER_PORT"))]
        argv += ["--webui-port", str(_port(env, "SPARK_WORKER_WEBUI_PORT"))]
        argv += ["--work-dir", str(work), env["SPARK_MASTER_URL"]]
        return Launch(argv, env, (work,), _sweeper(env, python), _worker_forks(env))
    return Launch(_connect_argv(env, address), env, (), _sweeper(env, python), _worker_forks(env))


def _worker_forks(env: Mapping[str, str]) -> bool:
    key = "CONNECT_PLUGIN_WORKER_FORKS"
    raw = env[key].strip().lower()
    if raw not in ("true", "false"):
        raise EntrypointError(f"{key}={env[key]!r} must be true or false")
    return raw == "true"


def _start_worker_forks(env: MutableMapping[str, str], python: str) -> None:
    """Start the fork server and name its socket in ``env``; it lives as long as the program
    this process execs next (which inherits its end of the server's input)."""
    from connect_plugin.spark_processes.worker_forks import WorkerForks
    from connect_plugin.worker_python import FORKS_VARIABLE

    forks = WorkerForks(python)
    path = forks.start(output=None)
    if forks.ready():
        forks.outlive_exec()
        env[FORKS_VARIABLE] = path
    else:
        print("entrypoint: the Python worker fork server did not start", file=sys.stderr)


def _sweeper(env: Mapping[str, str], python: str) -> tuple[str, ...]:
    """The command that stops idle Python worker daemons beside a role; none when told never."""
    key = "CONNECT_PLUGIN_PYTHON_WORKER_IDLE_S"
    raw = env[key]
    try:
        idle_s = float(raw)
    except ValueError:
        raise EntrypointError(f"{key}={raw!r} is not a number of seconds") from None
    if idle_s < 0:
        raise EntrypointError(f"{key}={raw!r} must be positive (or 0: never)")
    if idle_s == 0:
        return ()
    return (python, "-m", "connect_plugin.cli", "stop-idle-python-workers", "--idle-s", raw)


def _connect_argv(env: Mapping[str, str], address: str) -> list[str]:
    """spark-submit of the Spark Connect server, its driver reachable at ``address``."""
    from connect_plugin.server.embedded import EmbeddedSparkConnect

    bind = env.get("SPARK_LOCAL_IP") or WILDCARD_ADDRESSES[1]
    conf_dir = Path(env["CONNECT_PLUGIN_CONF_DIR"])
    server = EmbeddedSparkConnect(
        conf_dir=conf_dir if conf_dir.is_dir() else None,
        host=bind,
        port=_port(env, "SPARK_CONNECT_PORT"),
        master=env["SPARK_MASTER_URL"],
        extra_conf={
            "spark.driver.host": address,
            "spark.pyspark.python": env["PYSPARK_PYTHON"],
            "spark.pyspark.driver.python": env["PYSPARK_DRIVER_PYTHON"],
        },
    )
    return server.command()


def probe(role: str, environ: Mapping[str, str]) -> Probe:
    """Where ``role`` answers once it is up."""
    env = settings(environ, role)
    if role in ("local", "gateway"):
        from connect_plugin.config import load_config

        config = load_config(env=env)
        host = LOOPBACK if config.host in WILDCARD_ADDRESSES else config.host
        return Probe(host, config.port, grpc_health=True)
    address = local_address(env)
    if role == "master":
        host = env.get("SPARK_MASTER_HOST") or address
        return Probe(host, _port(env, "SPARK_MASTER_PORT"), grpc_health=False)
    if role == "worker":
        return Probe(address, _port(env, "SPARK_WORKER_PORT"), grpc_health=False)
    return Probe(address, _port(env, "SPARK_CONNECT_PORT"), grpc_health=False)


def check(target: Probe, timeout: float = HEALTH_TIMEOUT_S) -> str | None:
    """None when ``target`` answers; otherwise what is wrong."""
    if not target.grpc_health:
        try:
            with socket.create_connection((target.host, target.port), timeout=timeout):
                return None
        except OSError as exc:
            return f"nothing accepts connections on {target.host}:{target.port} ({exc})"
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(f"{target.host}:{target.port}") as channel:
        try:
            answer = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=timeout
            )
        except grpc.RpcError as exc:
            return f"gRPC health of {target.host}:{target.port}: {exc.code().name}"
    if answer.status != health_pb2.HealthCheckResponse.SERVING:
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
        return f"gRPC health of {target.host}:{target.port}: {status}"
    return None


def main(argv: Sequence[str]) -> int:
    try:
        role = role_of(os.environ)
        if list(argv) == [HEALTH_COMMAND]:
            problem = check(probe(role, os.environ))
            print(f"{role}: {problem or 'healthy'}", flush=True)
            return 0 if problem is None else 1
        if argv:
            os.execvp(argv[0], list(argv))
        started = launch(role, os.environ)
    except (EntrypointError, ConnectPluginError) as exc:
        print(f"entrypoint: {exc}", file=sys.stderr)
        return 2
    for folder in started.folders:
        folder.mkdir(parents=True, exist_ok=True)
    if started.worker_forks:
        _start_worker_forks(started.env, sys.executable)
    if started.beside:
        subprocess.Popen([*started.beside, "--while-pid", str(os.getpid())], env=started.env)
    print(f"entrypoint: {role}: {' '.join(started.argv)}", file=sys.stderr, flush=True)
    os.execvpe(started.argv[0], started.argv, started.env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
