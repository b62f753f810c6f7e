"""Finding and stopping Python worker daemons, on real processes that look like Spark's."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_plugin.spark_processes.python_daemons import Daemon, IdleDaemons, daemons, stop_session

WAIT_S = 10.0
SESSION = "SPARK_JOB_ARTIFACT_UUID"


def _daemon_argv(workers: int = 0, forks: int = 0, ran: Path | None = None) -> list[str]:
    code = "import os, signal, subprocess, sys, time\n"
    if ran is not None:
        code += (
            "def worker(*_):\n"
            "    child = os.fork()\n"
            "    if child == 0:\n"
            "        bytearray(8 << 20)\n"
            "        os._exit(0)\n"
            "    os.waitpid(child, 0)\n"
            f"    open({str(ran)!r}, 'w').close()\n"
            "signal.signal(signal.SIGUSR1, worker)\n"
        )
    code += f"kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']) for _ in range({workers})]\n"
    code += f"for _ in range({forks}):\n    if os.fork() == 0:\n        time.sleep(60)\n        os._exit(0)\n"
    code += "time.sleep(60)\n"
    return [sys.executable, "-c", code, "-m", "pyspark.daemon", "pyspark.worker"]


def _daemon(session: str, workers: int = 0, forks: int = 0) -> subprocess.Popen[bytes]:
    """A process shaped like ``python -m pyspark.daemon`` of ``session``, with child workers
    started anew (``workers``) or forked, as Spark's are (``forks``)."""
    env = {**os.environ, SESSION: session}
    return subprocess.Popen(_daemon_argv(workers, forks), env=env, start_new_session=True)


def _spark(*wanted: tuple[str, int], ran: Path | None = None) -> subprocess.Popen[bytes]:
    """A process shaped like a Spark JVM: it starts a daemon per (session, workers); with
    ``ran``, each daemon runs a short worker (forks, waits for it) on ``SIGUSR1``, then
    writes that file."""
    specs = [
        (_daemon_argv(workers, ran=ran), {**os.environ, SESSION: s}) for s, workers in wanted
    ]
    code = "import json, subprocess, sys, time\n"
    code += "for argv, env in json.loads(sys.argv[1]):\n    subprocess.Popen(argv, env=env)\n"
    code += "time.sleep(60)\n"
    return subprocess.Popen(
        [sys.executable, "-c", code, json.dumps(specs)], start_new_session=True
    )


def _under(spark: subprocess.Popen[bytes], workers: list[int]) -> list[Daemon]:
    """The daemons under ``spark`` once there is one with each count of ``workers``."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = daemons(under=spark.pid)
        if sorted(d.workers for d in found) == sorted(workers):
            return found
        time.sleep(0.05)
    raise AssertionError(f"daemons with {workers} workers did not start under {spark.pid}")


def _stopped(pid: int) -> bool:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if not any(d.pid == pid for d in daemons()):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        process.wait()


def _gone(process: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return True
        time.sleep(0.05)
    return False


def _found(pid: int, workers: int) -> bool:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if any(d.pid == pid and d.workers == workers for d in daemons()):
            return True
        time.sleep(0.05)
    return False


def test_the_daemons_of_one_session_are_stopped(started: list[subprocess.Popen[bytes]]) -> None:
    ended, live = str(uuid.uuid4()), str(uuid.uuid4())
    started += [_daemon(ended), _daemon(ended), _daemon(live)]
    assert all(_found(p.pid, 0) for p in started)
    assert stop_session(ended) == 2
    assert _gone(started[0])
    assert _gone(started[1])
    assert started[2].poll() is None
    assert stop_session("") == 0


def test_a_daemons_forked_workers_are_its_workers_not_daemons(
    started: list[subprocess.Popen[bytes]],
) -> None:
    session = str(uuid.uuid4())
    started.append(_daemon(session, forks=2))
    assert _found(started[0].pid, 2)
    assert [d.pid for d in daemons() if d.session == session] == [started[0].pid]
    assert stop_session(session) == 1


def test_only_daemons_under_the_spark_process_without_workers_for_the_idle_time_stop(
    started: list[subprocess.Popen[bytes]],
) -> None:
    session = str(uuid.uuid4())
    spark = _spark((session, 0), (session, 1))
    outside = _daemon(str(uuid.uuid4()))
    started += [spark, outside]
    idle_one, busy_one = sorted(_under(spark, [0, 1]), key=lambda d: d.workers)
    assert _found(outside.pid, 0)
    idle = IdleDaemons(idle_s=30.0, under=spark.pid)
    now = time.monotonic()
    assert idle.sweep(now) == 0
    assert idle.sweep(now + 31.0) == 1
    assert _stopped(idle_one.pid)
    assert any(d.pid == busy_one.pid for d in daemons())
    assert outside.poll() is None, "a daemon of another Spark process is never looked at"


def test_a_daemon_that_ran_a_worker_between_two_looks_is_idle_only_from_the_second(
    started: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    spark = _spark((str(uuid.uuid4()), 0), ran=ran)
    started.append(spark)
    (daemon,) = _under(spark, [0])
    idle = IdleDaemons(idle_s=30.0, under=spark.pid)
    now = time.monotonic()
    assert idle.sweep(now) == 0
    _catches_usr1(daemon.pid)
    os.kill(daemon.pid, signal.SIGUSR1)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and not ran.exists():
        time.sleep(0.05)
    assert ran.exists(), "the daemon's short worker did not run"
    assert idle.sweep(now + 31.0) == 0, "a daemon that just ran a worker is not idle"
    assert idle.sweep(now + 62.0) == 1
    assert _stopped(daemon.pid)


def _catches_usr1(pid: int) -> None:
    """Wait until the process has its ``SIGUSR1`` handler (``SigCgt`` of its status)."""
    bit = 1 << (signal.SIGUSR1 - 1)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        status = Path(f"/proc/{pid}/status").read_text()
        caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
        if int(caught.split()[1], 16) & bit:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never caught SIGUSR1")


def test_the_sweeper_command_stops_idle_daemons_while_its_process_lives(
    started: list[subprocess.Popen[bytes]],
) -> None:
    command = [sys.executable, "-m", "connect_plugin.cli", "stop-idle-python-workers"]
    role = _spark((str(uuid.uuid4()), 0))
    outside = _daemon(str(uuid.uuid4()))
    started += [role, outside]
    (mine,) = _under(role, [0])
    sweeper = subprocess.Popen(
        [*command, "--idle-s", "1", "--while-pid", str(role.pid)], start_new_session=True
    )
    started.append(sweeper)
    assert _stopped(mine.pid)
    assert sweeper.poll() is None
    assert outside.poll() is None
    os.killpg(role.pid, 9)
    role.wait()
    assert _gone(sweeper)
    assert sweeper.returncode == 0
    refused = subprocess.run([*command, "--idle-s", "0", "--while-pid", "1"], capture_output=True, text=True)
    assert refused.returncode == 2
    assert "--idle-s must be positive" in refused.stderr
