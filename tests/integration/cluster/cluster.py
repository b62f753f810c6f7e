"""A Spark standalone cluster behind the gateway, one role per host, run by the image's entrypoint.

Hosts are network namespaces (``netns``): a master, workers, a Spark Connect
server (the driver), the gateway and a client. Every role is
``docker/entrypoint.py`` with the environment a container of the compose file
would get, except for what differs between an image and this machine: the
Python (this interpreter), the addresses (``SPARK_LOCAL_IP`` of each host) and
the folders (under one shared folder, the same path on every host, as the
compose file's named volume is).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.image import ENTRYPOINT
from tests.integration.cluster.netns import Network, kill_group

CLIENT_AGENT = Path(__file__).with_name("client_agent.py")

MASTER_PORT = 7077
CONNECT_PORT = 15002
GATEWAY_PORT = 15002
WORKER_CORES = 1
WORKER_MEMORY = "1536m"
SWEEPER = "stop-idle-python-workers"
FORK_SERVER = b"connect_plugin.spark_processes.worker_forks"
SPARK_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
    "spark.executor.memory": "1g",
    "spark.sql.shuffle.partitions": "4",
    "spark.connect.grpc.maxInboundMessageSize": "268435456",
    # The driver waits for every worker's executor before it serves, so the
    # first query already has both workers.
    "spark.scheduler.minRegisteredResourcesRatio": "1.0",
    "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
}
HEALTH_POLL_S = 0.5
HEALTH_CHECK_TIMEOUT_S = 30.0
START_TIMEOUT_S = 240.0
STOP_TIMEOUT_S = 20.0
CLIENT_TIMEOUT_S = 300.0
REGISTERED = "Successfully registered with driver"
FINISHED_TASK = re.compile(r"Finished task \S+ in stage \S+ \(TID (\d+)\)")
RUNNING_TASK = re.compile(r"Running task \S+ in stage \S+ \(TID (\d+)\)")


TIMINGS: dict[str, float] = {}
"""Seconds of each step the cluster tests measure, printed at the end of the test session."""


class ClientError(Exception):
    """The client's call failed; ``kind`` is the exception class it raised."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


def wait_for(condition: Callable[[], bool], timeout: float, what: str, poll: float = 0.1) -> float:
    """Poll ``condition()`` until true; the seconds it took. Fails naming ``what``."""
    began = time.monotonic()
    while not condition():
        if time.monotonic() - began > timeout:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)
    return time.monotonic() - began


class Client:
    """The client agent on the client host: see ``client_agent``."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.sessions: dict[str, str] = {}
        """Open sessions: the test's name -> Spark's session id."""
        assert self.receive(CLIENT_TIMEOUT_S) == {"ready": True}

    def send(self, **request: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request).encode() + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = CLIENT_TIMEOUT_S) -> dict[str, Any]:
        stdout = self.process.stdout
        assert stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                raise AssertionError(f"the client gave no answer within {timeout:.0f} s")
        line = stdout.readline()
        if not line:
            raise AssertionError(f"the client exited with code {self.process.wait()}")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise ClientError(answer["error"], answer["message"])
        return answer

    def call(self, **request: Any) -> dict[str, Any]:
        self.send(**request)
        return self.receive()

    def open(self, session: str) -> str:
        session_id: str = self.call(op="open", session=session)["session_id"]
        self.sessions[session] = session_id
        return session_id

    def sql(self, session: str, query: str) -> list[list[Any]]:
        rows: list[list[Any]] = self.call(op="sql", session=session, query=query)["rows"]
        return rows

    def scan(self, session: str, paths: str, select: list[str], **options: Any) -> list[list[Any]]:
        """``connect_plugin.scan(spark, paths, **options).selectExpr(*select)``, collected."""
        answer = self.call(op="scan", session=session, paths=paths, options=options, select=select)
        rows: list[list[Any]] = answer["rows"]
        return rows

    def stop(self, session: str) -> None:
        """``spark.stop()``: the session is released."""
        self.call(op="stop", session=session)
        del self.sessions[session]


class Cluster:
    """Hosts on one network, the entrypoint role each runs, and a client host.

    ``standalone`` is the compose file's cluster (master, workers, connect,
    gateway); ``single`` is the one-container service of users' CI (``local``).
    """

    def __init__(
        self,
        network: Network,
        root: Path,
        roles: dict[str, str],
        worker_cores: int = WORKER_CORES,
    ) -> None:
        self.network = network
        self.worker_cores = worker_cores
        self.root = root
        self.workspace = root / "workspace"
        self.conf_dir = root / "conf"
        self.roles = roles
        self.workers = [name for name, role in roles.items() if role == "worker"]
        self.hosts = {name: network.add_host(name) for name in [*roles, "client"]}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        conf = dict(SPARK_DEFAULTS)
        if self.workers:
            conf["spark.cores.max"] = str(worker_cores * len(self.workers))
        (self.conf_dir / "spark-defaults.conf").write_text(
            "".join(f"{key} {value}\n" for key, value in conf.items())
        )

    @classmethod
    def standalone(
        cls, network: Network, root: Path, workers: int = 2, cores: int = WORKER_CORES
    ) -> Cluster:
        """The compose file's cluster, with ``workers`` workers of ``cores`` cores each."""
        names = [f"worker{number}" for number in range(1, workers + 1)]
        roles = {"master": "master", **dict.fromkeys(names, "worker")}
        roles.update(connect="connect", gateway="gateway")
        return cls(network, root, roles, worker_cores=cores)

    @classmethod
    def single(cls, network: Network, root: Path) -> Cluster:
        return cls(network, root, {"local": "local"})

    def name_of(self, role: str) -> str:
        (name,) = [name for name, has in self.roles.items() if has == role]
        return name

    def address(self, name: str) -> str:
        return self.hosts[name].address

    @property
    def gateway_url(self) -> str:
        """Where clients connect: the gateway, or the one-container service."""
        front = "gateway" if "gateway" in self.roles.values() else "local"
        return f"sc://{self.address(self.name_of(front))}:{GATEWAY_PORT}"

    def folder(self, name: str) -> Path:
        return self.root / "hosts" / name

    def log(self, name: str) -> Path:
        return self.folder(name) / f"{name}.log"

    def work_dir(self, worker: str) -> Path:
        return self.folder(worker) / "work"

    def env(self, name: str) -> dict[str, str]:
        """What a container of this role gets from the compose file, with this host's values."""
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("CONNECT_PLUGIN_", "SPARK_", "PYSPARK_"))
        }
        env.update(
            CONNECT_PLUGIN_CONF_DIR=str(self.conf_dir),
            CONNECT_PLUGIN_WORKSPACE=str(self.workspace),
            CONNECT_PLUGIN_HOST=self.address(name),
            CONNECT_PLUGIN_PORT=str(GATEWAY_PORT),
            CONNECT_PLUGIN_ALLOW_UNAUTHENTICATED="true",
            SPARK_LOCAL_IP=self.address(name),
            SPARK_CONNECT_PORT=str(CONNECT_PORT),
            SPARK_MASTER_PORT=str(MASTER_PORT),
            SPARK_WORKER_DIR=str(self.work_dir(name)),
            SPARK_WORKER_CORES=str(self.worker_cores),
            SPARK_WORKER_MEMORY=WORKER_MEMORY,
        )
        role = self.roles.get(name)
        if role is not None:
            env["CONNECT_PLUGIN_ROLE"] = role
        if "master" in self.roles:
            env["SPARK_MASTER_URL"] = f"spark://{self.address('master')}:{MASTER_PORT}"
        if role == "gateway":
            env["CONNECT_PLUGIN_UPSTREAM"] = f"sc://{self.address('connect')}:{CONNECT_PORT}"
        return env

    def sweepers(self, name: str) -> list[list[str]]:
        """The arguments after ``stop-idle-python-workers`` of each sweeper process whose
        parent is host ``name``'s role process (the entrypoint started it, then became the
        role)."""
        role = self.processes[name].pid
        found = []
        for _, parent, cmdline in _processes():
            argv = [part.decode() for part in cmdline.split(b"\0") if part]
            if parent == role and SWEEPER in argv:
                found.append(argv[argv.index(SWEEPER) + 1 :])
        return found

    def forked_daemons(self, name: str) -> int | None:
        """How many Python worker daemons the fork server beside host ``name``'s role process
        forked and still runs; None when there is no such server."""
        role = self.processes[name].pid
        processes = list(_processes())
        servers = [
            pid
            for pid, parent, cmdline in processes
            if parent == role and FORK_SERVER in cmdline.split(b"\0")
        ]
        if not servers:
            return None
        return sum(1 for _, parent, _ in processes if parent in servers)

    def start(self, name: str) -> None:
        host = self.hosts[name]
        self.processes[name] = host.spawn(
            [sys.executable, str(ENTRYPOINT)],
            env=self.env(name),
            log=self.log(name),
            cwd=self.folder(name),
        )

    def healthy(self, name: str) -> bool:
        """What the image's healthcheck says of ``name``."""
        process = self.processes[name]
        if process.poll() is not None:
            raise AssertionError(
                f"{name} exited with code {process.returncode}; log:\n{self.log_tail(name)}"
            )
        checked = self.hosts[name].run(
            [sys.executable, str(ENTRYPOINT), "health"],
            env=self.env(name),
            timeout=HEALTH_CHECK_TIMEOUT_S,
        )
        return checked.returncode == 0

    def wait_healthy(self, *names: str, timeout: float = START_TIMEOUT_S) -> float:
        return wait_for(
            lambda: all(self.healthy(name) for name in names),
            timeout,
            f"{', '.join(names)} to be healthy",
            HEALTH_POLL_S,
        )

    def stages(self) -> list[list[str]]:
        """Start order: the master, then the workers and the driver, then the gateway."""
        order = ["master", "worker", "connect", "gateway", "local"]
        stages: list[list[str]] = []
        for roles in (order[:1], order[1:3], order[3:]):
            names = [name for name, role in self.roles.items() if role in roles]
            if names:
                stages.append(names)
        return stages

    def started(self, what: str) -> Cluster:
        """This cluster with every role healthy; its start-up time goes to ``TIMINGS``."""
        TIMINGS[f"{what} start-up"] = self.start_all()
        return self

    def start_all(self) -> float:
        """Every role, stage by stage, each healthy before the next; seconds until all serve."""
        began = time.monotonic()
        for names in self.stages():
            for name in names:
                self.start(name)
            self.wait_healthy(*names)
        for worker in self.workers:
            self.wait_registered(worker)
        return time.monotonic() - began

    def kill(self, name: str) -> None:
        """SIGKILL the role and everything it started, as a host losing power would."""
        kill_group(self.processes[name])

    def log_tail(self, name: str, lines: int = 40) -> str:
        path = self.log(name)
        return (
            "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
            if path.exists()
            else ""
        )

    def executor_logs(self, worker: str) -> list[Path]:
        """stderr of every executor this worker ran: ``<work dir>/<app>/<executor>/stderr``."""
        return sorted(self.work_dir(worker).glob("*/*/stderr"))

    def executor_text(self, worker: str) -> str:
        return "".join(path.read_text(errors="replace") for path in self.executor_logs(worker))

    def finished_tasks(self, worker: str) -> set[int]:
        """Ids of the tasks the executors of ``worker`` finished."""
        return {int(tid) for tid in FINISHED_TASK.findall(self.executor_text(worker))}

    def running_tasks(self, worker: str) -> set[int]:
        """Ids of the tasks the executors of ``worker`` started and have not finished."""
        started = {int(tid) for tid in RUNNING_TASK.findall(self.executor_text(worker))}
        return started - self.finished_tasks(worker)

    def registered_executors(self, worker: str) -> int:
        """How many executors of ``worker`` registered with the driver, dead ones included."""
        return sum(
            REGISTERED in path.read_text(errors="replace") for path in self.executor_logs(worker)
        )

    def wait_registered(
        self, worker: str, more_than: int = 0, timeout: float = START_TIMEOUT_S
    ) -> float:
        """Until more than ``more_than`` executors of ``worker`` registered with the driver."""
        return wait_for(
            lambda: self.registered_executors(worker) > more_than,
            timeout,
            f"an executor on {worker} to register with the driver",
        )

    @contextlib.contextmanager
    def client(self) -> Iterator[Client]:
        process = self.hosts["client"].spawn(
            [sys.executable, str(CLIENT_AGENT), self.gateway_url],
            env=self.env("client"),
            log=self.log("client"),
            cwd=self.folder("client"),
            piped=True,
        )
        try:
            yield Client(process)
        finally:
            if process.stdin is not None:
                with contextlib.suppress(BrokenPipeError):
                    process.stdin.close()
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                kill_group(process)
            if process.stdout is not None:
                process.stdout.close()

    def close(self) -> None:
        self.network.close()


def _processes() -> list[tuple[int, int, bytes]]:
    """(pid, parent pid, command line) of every process that can be read."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            status = (proc / "status").read_text()
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(status.split("\nPPid:", 1)[1].split()[0])
        found.append((int(proc.name), parent, cmdline))
    return found
