"""Finding and stopping Python worker daemons, on real processes that look like Spark's."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest

from connect_plugin.server.python_workers import IdleDaemons, daemons, stop_session

WAIT_S = 10.0


def _daemon(session: str, workers: int = 0, forks: int = 0) -> subprocess.Popen[bytes]:
    """A process shaped like ``python -m pyspark.daemon`` of ``session``, with child workers
    started anew (``workers``) or forked, as Spark's are (``forks``)."""
    code = "import os, subprocess, sys, time\n"
    code += f"kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']) for _ in range({workers})]\n"
    code += f"for _ in range({forks}):\n    if os.fork() == 0:\n        time.sleep(60)\n        os._exit(0)\n"
    code += "time.sleep(60)\n"
    env = {**os.environ, "SPARK_JOB_ARTIFACT_UUID": session}
    return subprocess.Popen(
        [sys.executable, "-c", code, "-m", "pyspark.daemon", "pyspark.worker"],
        env=env,
        start_new_session=True,
    )


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


def test_only_daemons_without_workers_for_the_idle_time_are_stopped(
    started: list[subprocess.Popen[bytes]],
) -> None:
    session = str(uuid.uuid4())
    other = str(uuid.uuid4())
    started += [_daemon(session), _daemon(session, workers=1), _daemon(other)]
    assert _found(started[0].pid, 0)
    assert _found(started[1].pid, 1)
    assert _found(started[2].pid, 0)
    idle = IdleDaemons(idle_s=30.0)
    now = time.monotonic()
    assert idle.sweep(now, sessions={session}) == 0
    assert all(p.poll() is None for p in started)
    assert idle.sweep(now + 31.0, sessions={session}) == 1
    assert _gone(started[0])
    assert started[1].poll() is None
    assert started[2].poll() is None


def test_the_sweeper_command_stops_idle_daemons_while_its_process_lives(
    started: list[subprocess.Popen[bytes]],
) -> None:
    command = [sys.executable, "-m", "connect_plugin.cli", "stop-idle-python-workers"]
    role = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    sweeper = subprocess.Popen(
        [*command, "--idle-s", "1", "--while-pid", str(role.pid)], start_new_session=True
    )
    started += [_daemon(str(uuid.uuid4())), role, sweeper]
    assert _gone(started[0])
    assert sweeper.poll() is None
    role.kill()
    role.wait()
    assert _gone(sweeper)
    assert sweeper.returncode == 0
    refused = subprocess.run([*command, "--idle-s", "0"], capture_output=True, text=True)
    assert refused.returncode == 2
    assert "--idle-s must be positive" in refused.stderr
