"""The worker fork server starts ``pyspark.daemon`` as the interpreter Spark meant to start would.

Each test plays Spark's part with real processes: it starts the launcher
``connect-plugin-python -m pyspark.daemon <module>`` with pipes for its
standard streams and a worker environment, reads the daemon's port, and asks
the daemon for a worker. The worker module is a probe on the daemon's
``PYTHONPATH`` (as a session's files are) that reports what the worker sees:
working folder, path, arguments, environment, random numbers. The same probe
run by the plain interpreter is the reference.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pwd
import select
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest

from connect_plugin.spark_processes.python_daemons import daemons
from connect_plugin.spark_processes.worker_forks import PRELOAD, WorkerForks, reseed
from connect_plugin.worker_python import FORKS_VARIABLE

LAUNCHER = str(Path(sys.executable).with_name("connect-plugin-python"))
SPARK_ZIP = Path(pyspark.__file__).parent / "python" / "lib" / "pyspark.zip"
SECRET = "worker-secret"
WAIT_S = 10.0

PROBE = '''
import json, os, random, struct, sys

def main(infile, outfile):
    import numpy
    seen = {
        "cwd": os.getcwd(),
        "path": [entry for entry in sys.path if entry],
        "argv": sys.argv[1:],
        "environment": {k: v for k, v in os.environ.items() if k.startswith(("SPARK_", "PYSPARK_", "PYTHON", "PROBE_"))},
        "pyspark": sys.modules["pyspark"].__file__,
        "random": random.random(),
        "numpy": float(numpy.random.random()),
        "hash": hash("connect-plugin"),
    }
    data = json.dumps(seen).encode()
    outfile.write(struct.pack("!i", len(data)) + data)
    outfile.flush()
'''


@pytest.fixture(scope="module")
def forks() -> Iterator[WorkerForks]:
    server = WorkerForks(sys.executable)
    server.start()
    assert server.ready()
    yield server
    server.stop()


@pytest.fixture
def session(tmp_path: Path) -> Path:
    """A session's folder: the daemon's working folder, with the probe module on its path."""
    folder = tmp_path / "session"
    folder.mkdir()
    (folder / "pyspark_probe.py").write_text(PROBE)
    return folder


def _environment(session: Path, forks: WorkerForks | None, **extra: str) -> dict[str, str]:
    """What Spark gives a daemon: the zip first on the path, the session's folder after it."""
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SPARK_ZIP), str(session)]),
        "PYTHONHASHSEED": "0",
        "PYTHONUNBUFFERED": "YES",
        "PYTHON_WORKER_FACTORY_SECRET": SECRET,
        "SPARK_JOB_ARTIFACT_UUID": session.parent.name,
        "PROBE_SESSION": str(session),
    }
    environment.pop(FORKS_VARIABLE, None)
    if forks is not None:
        assert forks.path is not None
        environment[FORKS_VARIABLE] = forks.path
    return environment | extra


class Launched:
    """A launcher started as Spark starts a daemon, and the daemon's port."""

    def __init__(self, session: Path, environment: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [LAUNCHER, "-m", "pyspark.daemon", "pyspark_probe"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment,
            cwd=session,
        )
        assert self.process.stdout is not None
        (self.port,) = struct.unpack("!i", self.process.stdout.read(4))

    def worker(self) -> tuple[int, socket.socket]:
        """Ask the daemon for a worker: its pid and its socket, authenticated."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=WAIT_S)
        (pid,) = struct.unpack("!i", _exactly(sock, 4))
        secret = SECRET.encode()
        sock.sendall(struct.pack("!i", len(secret)) + secret)
        (length,) = struct.unpack("!i", _exactly(sock, 4))
        assert _exactly(sock, length) == b"ok"
        return pid, sock

    def probe(self) -> dict[str, Any]:
        """What a worker of this daemon sees."""
        _, sock = self.worker()
        with sock:
            (length,) = struct.unpack("!i", _exactly(sock, 4))
            seen: dict[str, Any] = json.loads(_exactly(sock, length))
        return seen

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def _exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError(f"the daemon closed after {len(data)} of {size} bytes")
        data += chunk
    return data


@pytest.fixture
def launched() -> Iterator[list[Launched]]:
    started: list[Launched] = []
    yield started
    for launcher in started:
        launcher.stop()


def _launch(launched: list[Launched], session: Path, environment: dict[str, str]) -> Launched:
    launcher = Launched(session, environment)
    launched.append(launcher)
    return launcher


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            if f"\nPPid:\t{pid}\n" in status:
                found.append(int(entry.name))
    return found


def _watch(pid: int) -> int:
    """A pidfd of ``pid``, taken while it runs: it tells the process's end even once the
    number goes to another process."""
    return os.pidfd_open(pid)


def _ended(handle: int) -> bool:
    try:
        return bool(select.select([handle], [], [], WAIT_S)[0])
    finally:
        os.close(handle)


def _gone(pid: int) -> bool:
    try:
        handle = _watch(pid)
    except ProcessLookupError:
        return True
    return _ended(handle)


def test_a_forked_daemon_sees_what_the_interpreter_would(
    forks: WorkerForks, session: Path, launched: list[Launched]
) -> None:
    plain = _launch(launched, session, _environment(session, None)).probe()
    forked_launcher = _launch(launched, session, _environment(session, forks))
    forked = forked_launcher.probe()
    assert forked_launcher.process.pid not in _children(_server_pid(forks))
    assert [pid for pid in _children(_server_pid(forks)) if not _gone_now(pid)]
    for key in ("cwd", "path", "argv", "environment", "pyspark", "hash"):
        assert forked[key] == plain[key], key
    assert forked["pyspark"] == pyspark.__file__
    assert forked["path"][:2] == [str(session), str(session)]


def _server_pid(forks: WorkerForks) -> int:
    process = forks._process
    assert process is not None
    return process.pid


def _gone_now(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


def test_a_daemon_with_a_random_hash_seed_is_forked_with_the_servers_seed(
    forks: WorkerForks, session: Path, launched: list[Launched]
) -> None:
    """Spark's executors leave PYTHONHASHSEED unset (a seed drawn at start); the forked daemon
    hashes with the server's fixed seed, one such draw, and pyspark still finds it unset."""
    environment = _environment(session, forks)
    del environment["PYTHONHASHSEED"]
    before = set(_children(_server_pid(forks)))
    seen = _launch(launched, session, environment).probe()
    assert set(_children(_server_pid(forks))) - before
    assert "PYTHONHASHSEED" not in seen["environment"]
    plain = _launch(launched, session, _environment(session, None)).probe()
    assert seen["hash"] == plain["hash"]


def test_forked_daemons_do_not_share_random_numbers(
    forks: WorkerForks, session: Path, launched: list[Launched]
) -> None:
    first = _launch(launched, session, _environment(session, forks)).probe()
    second = _launch(launched, session, _environment(session, forks)).probe()
    assert first["random"] != second["random"]
    assert first["numpy"] != second["numpy"]


def test_the_launcher_is_the_daemon_spark_knows(
    forks: WorkerForks, session: Path, launched: list[Launched]
) -> None:
    """Found as the session's daemon, with the forked daemon's workers; SIGTERM to it (Spark's
    destroy, or a session that ended) stops the daemon and its workers."""
    launcher = _launch(launched, session, _environment(session, forks))
    (daemon,) = [pid for pid in _children(_server_pid(forks)) if not _gone_now(pid)]
    worker, sock = launcher.worker()
    with sock:
        (found,) = [d for d in daemons() if d.pid == launcher.process.pid]
        assert found.session == session.parent.name
        assert found.workers == 1
        launcher.process.send_signal(signal.SIGTERM)
        assert launcher.process.wait(WAIT_S) == 1
        assert _gone(daemon)
        assert _gone(worker)


@pytest.mark.parametrize("how", ["kill", "close"])
def test_a_daemon_goes_with_its_launcher_or_its_spark(
    how: str, forks: WorkerForks, session: Path, launched: list[Launched]
) -> None:
    """A launcher killed outright takes its daemon along; Spark closing the daemon's input
    stops it as it stops a daemon it started itself (exit code 1)."""
    launcher = _launch(launched, session, _environment(session, forks))
    (daemon,) = [pid for pid in _children(_server_pid(forks)) if not _gone_now(pid)]
    worker, sock = launcher.worker()
    daemon_end, worker_end = _watch(daemon), _watch(worker)
    with sock:
        if how == "kill":
            launcher.process.kill()
            launcher.process.wait(WAIT_S)
        else:
            assert launcher.process.stdin is not None
            launcher.process.stdin.close()
            assert launcher.process.wait(WAIT_S) == 1
        assert _ended(daemon_end)
        assert _ended(worker_end)


def test_no_worker_outlives_its_daemon_however_it_ends(
    forks: WorkerForks, session: Path, launched: list[Launched]
) -> None:
    """A daemon killed outright sends its workers nothing; the server ends them with it
    (they used to stay, their parent gone, blocked on Spark's socket)."""
    launcher = _launch(launched, session, _environment(session, forks))
    (daemon,) = [pid for pid in _children(_server_pid(forks)) if not _gone_now(pid)]
    worker, sock = launcher.worker()
    worker_end = _watch(worker)
    with sock:
        os.kill(daemon, signal.SIGKILL)
        assert _ended(worker_end), "the worker outlived its daemon"
        launcher.process.wait(WAIT_S)


RACE_ROUNDS = 20


def test_a_daemon_stopped_as_it_forks_leaves_no_worker(
    forks: WorkerForks, session: Path, launched: list[Launched]
) -> None:
    """Spark's part when a task is interrupted while it waits for a new worker: it has
    connected to the daemon, stops it (SIGTERM, its pipes closed) without reading the new
    worker's pid, and keeps the socket open. A worker forked in that instant ignores the
    daemon's SIGHUP; none may stay behind."""
    environment = _environment(session, forks)
    held = []
    try:
        for _ in range(RACE_ROUNDS):
            launcher = _launch(launched, session, environment)
            held.append(socket.create_connection(("127.0.0.1", launcher.port), timeout=WAIT_S))
            launcher.process.terminate()
            for stream in (launcher.process.stdin, launcher.process.stdout):
                assert stream is not None
                stream.close()
        for launcher in launched:
            launcher.process.wait(WAIT_S)
        deadline = time.monotonic() + WAIT_S
        while _strays(forks) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _strays(forks) == []
    finally:
        for sock in held:
            sock.close()


def _strays(forks: WorkerForks) -> list[int]:
    """The server's processes (it, its daemons and their workers share its command line,
    which names its socket) whose parent is none of them: workers whose daemon is gone."""
    assert forks.path is not None
    server, mark = _server_pid(forks), forks.path.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == server:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            parent = int((entry / "status").read_text().split("\nPPid:", 1)[1].split()[0])
            parent_cmdline = Path(f"/proc/{parent}/cmdline").read_bytes()
        except OSError:
            continue
        if mark in cmdline and mark not in parent_cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize(
    "change",
    [
        {"PYTHONHASHSEED": "7"},
        {"PYTHONOPTIMIZE": "1"},
        {"PYSPARK_ENABLE_NAMEDTUPLE_PATCH": "1"},
        {FORKS_VARIABLE: "/nonexistent/forks.sock"},
    ],
    ids=["hash-seed", "optimize", "pyspark-switch", "no-server"],
)
def test_a_daemon_the_server_cannot_start_alike_runs_the_interpreter(
    change: dict[str, str], forks: WorkerForks, session: Path, launched: list[Launched]
) -> None:
    before = set(_children(_server_pid(forks)))
    launcher = _launch(launched, session, _environment(session, forks, **change))
    seen = launcher.probe()
    assert not set(_children(_server_pid(forks))) - before
    assert Path(f"/proc/{launcher.process.pid}/cmdline").read_bytes().split(b"\0")[1:3] == [
        b"-m",
        b"pyspark.daemon",
    ]
    for name, value in change.items():
        if name != FORKS_VARIABLE:
            assert seen["environment"][name] == value


def test_another_pyspark_on_the_path_is_not_forked(
    forks: WorkerForks, session: Path, launched: list[Launched], tmp_path: Path
) -> None:
    """A zip of another pyspark version stays first on the path, so the daemon must load it,
    not the server's pyspark."""
    other = tmp_path / "other" / "pyspark.zip"
    other.parent.mkdir()
    with zipfile.ZipFile(SPARK_ZIP) as spark, zipfile.ZipFile(other, "w") as archive:
        for item in spark.infolist():
            if item.filename != "pyspark/version.py":
                archive.writestr(item, spark.read(item))
        archive.writestr("pyspark/version.py", '__version__: str = "3.9.9"\n')
    environment = _environment(session, forks)
    environment["PYTHONPATH"] = os.pathsep.join([str(other), str(session)])
    before = set(_children(_server_pid(forks)))
    launcher = _launch(launched, session, environment)
    assert launcher.probe()["pyspark"].startswith(str(other))
    assert not set(_children(_server_pid(forks))) - before


def test_the_socket_serves_only_its_user(forks: WorkerForks) -> None:
    assert forks.path is not None
    folder = Path(forks.path).parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    nobody = pwd.getpwnam("nobody")
    if os.getuid() != 0:
        pytest.skip("needs root to connect as another user")
    os.chmod(folder, 0o755)
    os.chmod(forks.path, 0o777)
    try:
        code = (
            "import os, socket, sys\n"
            f"os.setgid({nobody.pw_gid}); os.setuid({nobody.pw_uid})\n"
            "s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
            "s.connect(sys.argv[1])\n"
            "try:\n"
            "    socket.send_fds(s, [b'{}'], [0, 1, 2])\n"
            "    print('answered' if s.recv(100) else 'closed')\n"
            "except OSError:\n"
            "    print('closed')\n"
        )
        other = subprocess.run(
            [sys.executable, "-c", code, forks.path], capture_output=True, text=True, timeout=WAIT_S
        )
    finally:
        os.chmod(folder, 0o700)
    assert other.stdout.strip() == "closed", other.stderr


def test_the_server_ends_with_its_owner_and_leaves_no_folder() -> None:
    server = WorkerForks(sys.executable)
    path = server.start()
    assert server.ready()
    process = server._process
    assert process is not None
    server.stop()
    assert process.returncode == 0
    assert not Path(path).parent.exists()


def test_the_modules_of_ours_it_preloads_are_there() -> None:
    """The server skips a module that does not import, since another pyspark may lack one of
    its own; a module of ours named wrongly (moved, renamed) would go unnoticed but for the
    time every daemon then spends loading it."""
    ours = [name for name in PRELOAD if name.split(".")[0] == "connect_plugin"]
    assert ours
    assert [name for name in ours if importlib.util.find_spec(name) is None] == []


def test_a_fork_reseeds_numpy_when_it_was_loaded() -> None:
    """The server holds no numpy generator today; should a preloaded module load one, each
    daemon still draws its own numbers."""
    numpy_random = pytest.importorskip("numpy.random")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        reseed()
        os.write(write, struct.pack("!d", numpy_random.random()))
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        (child,) = struct.unpack("!d", pipe.read(8))
    os.waitpid(pid, 0)
    assert child != numpy_random.random()


def test_a_server_handed_to_an_exec_lives_as_long_as_that_program() -> None:
    """The image's roles start the server, then become Spark: the server stops when Spark
    does, and leaves no folder."""
    code = (
        "import os, sys\n"
        "from connect_plugin.spark_processes.worker_forks import WorkerForks\n"
        "forks = WorkerForks(sys.executable)\n"
        "path = forks.start()\n"
        "assert forks.ready()\n"
        "forks.outlive_exec()\n"
        "print(forks._process.pid, path, flush=True)\n"
        "os.execv('/bin/sh', ['sh', '-c', 'read line'])\n"
    )
    program = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert program.stdout is not None
    server, path = program.stdout.readline().split()
    time.sleep(0.5)
    assert Path(path).is_socket()
    assert not _gone_now(int(server))
    assert program.stdin is not None
    program.stdin.write("done\n")
    program.stdin.close()
    assert program.wait(WAIT_S) == 0
    assert _gone(int(server))
    deadline = time.monotonic() + WAIT_S
    while Path(path).parent.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(path).parent.exists()
    program.stdout.close()
