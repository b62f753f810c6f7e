"""A fork server for Spark's Python worker daemons: a session's daemons start already loaded.

Spark starts three Python worker daemons per session for a scan (create the
data source, plan the read, read), each a new interpreter that imports
pyspark, pyarrow and the scan anew: some 0.3-0.5 s a daemon, most of a new
session's first scan. This server imports all of that once and, for each
daemon Spark asks ``connect-plugin-python`` for, forks a copy of itself that
runs ``pyspark.daemon`` with the daemon's own standard streams, working
folder, environment and arguments, as the interpreter Spark meant to start
would.

- The launcher stays the process Spark knows: it passes its standard
  streams over a Unix socket (``SCM_RIGHTS``), forwards the signals Spark
  sends to the daemon, and exits with the daemon's exit code. A launcher
  that dies takes its daemon with it, as an ``exec`` would.
- No worker outlives its daemon: when a daemon ends, however it ends, what
  is left of its process group is killed before it is reaped.
- Only ``-m pyspark.daemon`` is forked, and only when what the daemon's
  interpreter would read at start-up matches this server's (the hash seed,
  unless the daemon leaves it random; the other ``PYTHON*`` start-up
  settings; pyspark's own import-time switches) and the daemon would import
  the installed pyspark; anything else is refused and the launcher runs the
  interpreter as before.
- ``random`` reseeds itself in a fork, and numpy's global generator is
  reseeded when it was loaded, so no two daemons share random numbers.
- The server serves only its own user (``SO_PEERCRED``), from a socket in
  a ``0700`` folder, and exits when its owner closes its standard input.

Run as ``python -m connect_plugin.spark_processes.worker_forks SOCKET``; it prints
``ready`` once it listens. ``EmbeddedSparkConnect`` starts one beside its JVM
and names its socket in ``CONNECT_PLUGIN_FORK_SERVER`` (``worker_python.FORKS_VARIABLE``).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import runpy
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO

from connect_plugin.spark_processes.process_users import as_user, user_options
from connect_plugin.worker_python import (
    DAEMON,
    MESSAGE_BYTES,
    ZIP_NAME,
    send_signal,
    worker_path,
)

PRELOAD = (
    "pyspark.worker",
    "pyspark.sql.worker.lookup_data_sources",
    "pyspark.sql.worker.create_data_source",
    "pyspark.sql.worker.plan_data_source_read",
    "connect_plugin.scanning.spark.spark_source",
)
"""What the daemons of a scan import: pyspark's worker modules (which ``pyspark.daemon``'s
imports are among; the daemon module itself runs as ``__main__``), pyarrow through them,
the scan. A module another pyspark version lacks is left out: its daemons load it themselves."""

START_UP_SETTINGS = (
    "PYTHONHASHSEED",
    "PYTHONOPTIMIZE",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONWARNINGS",
    "PYTHONFAULTHANDLER",
    "PYTHONDEVMODE",
    "PYTHONHOME",
    "PYTHONNOUSERSITE",
    "PYTHONSAFEPATH",
    "PYTHONINTMAXSTRDIGITS",
    "PYTHONMALLOC",
    "PYSPARK_ENABLE_NAMEDTUPLE_PATCH",
    "SPARK_TESTING",
    "PY4J_SKIP_COLLECTIONS",
)
"""Settings read once, when the interpreter or a preloaded module starts: a daemon whose
values differ from the server's is not forked."""

RANDOM_SEED = "PYTHONHASHSEED"
"""Unset, an interpreter hashes with a seed drawn at start; a daemon without it is forked
too and hashes with the server's fixed one, which is one of the seeds it could have drawn
(pyspark still finds the variable unset, as it would)."""

SERVER_SETTINGS = {"PYTHONHASHSEED": "0", "PYTHONUNBUFFERED": "YES", "OMP_NUM_THREADS": "1"}
"""The start-up settings Spark gives its Python workers, which the server starts with; and
one thread for numpy's linear algebra, as Spark gives its Python tasks, which keeps the
server single-threaded until it forks (the daemons that plan and the ones that run tasks
share it)."""

READY = "ready"
SOCKET_NAME = "forks.sock"
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0


@dataclass
class _Daemon:
    """A forked daemon as the server sees it: its launcher's connection and its pidfd."""

    pid: int
    connection: socket.socket
    handle: int
    abandoned: bool = False


@dataclass
class ForkServer:
    """The server's state: the listening socket and the daemons it forked and still waits for."""

    path: str
    listener: socket.socket = field(init=False)
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)
    daemons: dict[int, _Daemon] = field(default_factory=dict)
    settings: dict[str, str | None] = field(default_factory=dict)
    base_path: list[str] = field(default_factory=list)
    pyspark_version: str = ""

    def __post_init__(self) -> None:
        self.settings = {name: os.environ.get(name) for name in START_UP_SETTINGS}
        own = set(_entries(os.environ.get("PYTHONPATH", "")))
        self.base_path = [entry for entry in sys.path[1:] if entry not in own]
        from importlib import metadata

        self.pyspark_version = metadata.version("pyspark")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.listener.bind(self.path)
        self.listener.listen(64)

    def serve(self) -> None:
        """Fork daemons on request until standard input closes."""
        self.selector.register(self.listener, selectors.EVENT_READ, self._accept)
        self.selector.register(sys.stdin.fileno(), selectors.EVENT_READ, None)
        print(READY, flush=True)
        try:
            while True:
                for key, _ in self.selector.select():
                    if key.data is None:
                        if not os.read(sys.stdin.fileno(), 4096):
                            return
                        continue
                    try:
                        key.data(key.fileobj)
                    except Exception:
                        traceback.print_exc()
        finally:
            self.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            with contextlib.suppress(OSError):
                os.rmdir(os.path.dirname(self.path))

    def close(self) -> None:
        """Close what the server holds (in a forked daemon: its copies)."""
        self.selector.close()
        self.listener.close()
        for daemon in self.daemons.values():
            daemon.connection.close()
            os.close(daemon.handle)

    def _accept(self, _listener: object) -> None:
        try:
            connection, _ = self.listener.accept()
        except OSError:
            return
        try:
            self._start(connection)
        except Exception:
            traceback.print_exc()
            connection.close()

    def _start(self, connection: socket.socket) -> None:
        credentials = connection.getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")
        )
        _, uid, _ = struct.unpack("3i", credentials)
        if uid != os.getuid():
            connection.close()
            return
        connection.settimeout(5.0)
        message, fds, _, _ = socket.recv_fds(connection, MESSAGE_BYTES, 3)
        connection.settimeout(None)
        try:
            request = json.loads(message)
            reason = self.refusal(request, fds)
        except ValueError:
            reason = "unreadable request"
        if reason is not None:
            for fd in fds:
                os.close(fd)
            connection.send(json.dumps({"refused": reason}).encode())
            connection.close()
            return
        request["environment"]["PYTHONPATH"] = self.python_path(request["environment"])
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self.close()
            connection.close()
            os._exit(run_daemon(request, fds, self.base_path))
        for fd in fds:
            os.close(fd)
        daemon = _Daemon(pid, connection, os.pidfd_open(pid))
        self.daemons[pid] = daemon
        self.selector.register(daemon.handle, selectors.EVENT_READ, lambda _: self._ended(pid))
        self.selector.register(connection, selectors.EVENT_READ, lambda _: self._abandoned(pid))
        connection.send(json.dumps({"pid": pid}).encode())

    def refusal(self, request: Mapping[str, object], fds: Sequence[int]) -> str | None:
        """Why a request is not forked (None when it is): not a daemon, or a daemon whose
        interpreter would start otherwise than this server did."""
        arguments = request.get("arguments")
        environment = request.get("environment")
        if len(fds) != 3 or not isinstance(request.get("cwd"), str):
            return "unreadable request"
        if not isinstance(arguments, list) or tuple(arguments[:2]) != DAEMON:
            return "not a pyspark daemon"
        if not isinstance(environment, dict):
            return "unreadable request"
        for name, value in self.settings.items():
            wanted = environment.get(name)
            if wanted != value and not (name == RANDOM_SEED and wanted is None):
                return f"{name} differs"
        if ZIP_NAME in self.python_path(environment):
            return "another pyspark on the path"
        return None

    def python_path(self, environment: Mapping[str, str]) -> str:
        """The daemon's ``PYTHONPATH`` without the pyspark zip of the installed version."""
        return worker_path(environment.get("PYTHONPATH", ""), self.pyspark_version)

    def _ended(self, pid: int) -> None:
        """The daemon ended: its workers end too, then its status goes to its launcher."""
        daemon = self.daemons.pop(pid)
        self.selector.unregister(daemon.handle)
        if daemon.abandoned is False:
            self.selector.unregister(daemon.connection)
        stop_workers(pid)
        _, status = os.waitpid(pid, 0)
        with contextlib.suppress(OSError):
            daemon.connection.send(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())
        daemon.connection.close()
        os.close(daemon.handle)

    def _abandoned(self, pid: int) -> None:
        """The launcher went (Spark killed it): its daemon goes too."""
        daemon = self.daemons[pid]
        self.selector.unregister(daemon.connection)
        daemon.abandoned = True
        send_signal(pid, signal.SIGTERM)


def stop_workers(daemon: int) -> None:
    """Kill what is left of an ended daemon's process group: its workers.

    ``pyspark.daemon`` leads a process group of its own and, stopping, sends
    its group SIGHUP, which its workers die of; but a worker ignores SIGHUP,
    as the daemon does, from its fork until it starts to serve, so a daemon
    that stops as it forks (Spark stops one right after asking it for a
    worker when that task is interrupted) leaves that worker running, blocked
    on the socket Spark never reads, for good. A daemon killed outright
    leaves all of them. Called while the daemon is a zombie, not yet reaped:
    its pid, the group's id, cannot have gone to another process.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(daemon, signal.SIGKILL)


def _entries(python_path: str) -> list[str]:
    return [entry for entry in python_path.split(os.pathsep) if entry]


def run_daemon(request: Mapping[str, object], fds: Sequence[int], base_path: list[str]) -> int:
    """In the forked child: become the interpreter Spark meant to start, and run the daemon;
    its exit code."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        environment = request["environment"]
        arguments = request["arguments"]
        assert isinstance(environment, dict)
        assert isinstance(arguments, list)
        cwd = str(request["cwd"])
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environment)
        sys.path[:] = [cwd, *_entries(environment.get("PYTHONPATH", "")), *base_path]
        importlib.invalidate_caches()
        sys.argv[:] = [arguments[1], *arguments[2:]]
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGQUIT):
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        reseed()
        runpy.run_module(arguments[1], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
    return code


def reseed() -> None:
    """Reseed the random generators a fork copies (``random`` reseeds itself)."""
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()


class WorkerForks:
    """A fork server started beside a Spark JVM: its process and its private socket folder."""

    def __init__(
        self,
        python: str,
        run_as: tuple[int, int] | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> None:
        """``python``: the interpreter the launcher would run (the one of its environment);
        ``run_as``: the (uid, gid) the server runs as (the JVM's, whose launchers it serves),
        with no other group, who is given its socket folder (in the system's temporary
        folder: a socket's path is short); ``extra_env``: over this process's environment."""
        self.python = python
        self.run_as = run_as
        self.extra_env = dict(extra_env or {})
        self._folder: str | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def path(self) -> str | None:
        """The socket launchers connect to (None when not started)."""
        return None if self._folder is None else os.path.join(self._folder, SOCKET_NAME)

    def start(self, output: IO[bytes] | int | None = subprocess.DEVNULL) -> str:
        """Start the server, its errors to ``output`` (None: this process's) and return its
        socket path (it loads for a moment; launchers run the interpreter until it listens)."""
        self._folder = tempfile.mkdtemp(prefix="connect-plugin-forks-")
        if self.run_as is not None:
            os.lchown(self._folder, *self.run_as)
        environment = {**os.environ, **self.extra_env, **SERVER_SETTINGS}
        environment.pop("PYTHONPATH", None)
        self._process = subprocess.Popen(
            as_user(
                [self.python, "-m", __name__, os.path.join(self._folder, SOCKET_NAME)],
                self.run_as,
            ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=output,
            env=environment,
            cwd=self._folder,
            **user_options(self.run_as),
        )
        assert self.path is not None
        return self.path

    def ready(self, timeout: float = READY_TIMEOUT_S) -> bool:
        """Whether the server listens (waiting up to ``timeout``); one that does not is stopped,
        and the launchers keep running the interpreter."""
        process = self._process
        if process is None or process.stdout is None:
            return False
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            line = process.stdout.readline() if selector.select(timeout) else b""
        if line.strip() == READY.encode():
            return True
        self.stop()
        return False

    def outlive_exec(self) -> None:
        """Hand the server's input to the program this process is about to exec: the server
        then stops when that program exits (folder and all)."""
        assert self._process is not None
        assert self._process.stdin is not None
        os.set_inheritable(self._process.stdin.fileno(), True)

    def stop(self) -> None:
        """Stop the server (its forked daemons stay with their Spark) and remove its folder."""
        process, self._process = self._process, None
        if process is not None:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        folder, self._folder = self._folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> None:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if len(arguments) != 1:
        raise SystemExit("usage: python -m connect_plugin.spark_processes.worker_forks SOCKET")
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    ForkServer(arguments[0]).serve()


if __name__ == "__main__":
    main()
