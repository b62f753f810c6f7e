"""Spark's Python worker daemons on this machine: the ones of ended sessions are stopped.

Spark starts Python workers through a daemon (``python -m pyspark.daemon
<module>``) per Python runtime module and per session: the daemon's
environment carries the session's server-side id as
``SPARK_JOB_ARTIFACT_UUID``. Spark 4.0-4.3 never stop a session's daemons
when the session ends, so each session that ran a Python data source (every
scan) or a Python UDF leaves three or four daemons of some 40 MB each until
the server stops. Two ways bring that memory back:

- ``stop_session``: the daemons of one server-side session, when the
  gateway saw it end (released, expired, cloned in vain) and Spark runs on
  this machine (``--local``);
- ``IdleDaemons``: daemons of any session that have had no worker for
  ``idle_s`` seconds, where the Spark on the machine is the gateway's own
  (``--local``: a session Spark expired, or whose id the gateway never
  learnt, has daemons too) or beside a Spark process that runs without a
  gateway (``connect-plugin stop-idle-python-workers``, the image's worker
  and connect roles). Spark reaps a daemon's idle workers after a minute
  and starts a new daemon when a later task finds the old one gone, so a
  stopped daemon of a live session costs that session one daemon start,
  never a failure.

Only daemons of this user are looked at; a daemon gets ``SIGTERM``, on which
it stops its workers and exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from connect_plugin.errors import UpstreamFailed

if TYPE_CHECKING:
    from connect_plugin.server.sessions import Session, SessionRegistry
    from connect_plugin.server.upstream import UpstreamSession

log = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 60.0
"""The longest wait between two looks for idle daemons."""

DAEMON_MODULE = b"pyspark.daemon"
SESSION_VARIABLE = b"SPARK_JOB_ARTIFACT_UUID="


@dataclass(frozen=True)
class Daemon:
    """One ``pyspark.daemon`` process: its pid, its session and how many workers it has."""

    pid: int
    session: str
    workers: int


def daemons(proc: Path = Path("/proc")) -> list[Daemon]:
    """This user's Python worker daemons, from ``/proc`` (none where there is no ``/proc``).

    A daemon's workers are forks of it, with its command line and
    environment: they count as its workers, not as daemons.
    """
    uid = os.getuid()
    children: dict[int, int] = {}
    found: dict[int, tuple[int | None, str]] = {}
    for pid, status, cmdline in _processes(proc):
        parent = _field(status, b"PPid:")
        if parent is not None:
            children[parent] = children.get(parent, 0) + 1
        if _field(status, b"Uid:") != uid or DAEMON_MODULE not in cmdline.split(b"\0"):
            continue
        session = _session_of(proc / str(pid))
        if session is not None:
            found[pid] = (parent, session)
    return [
        Daemon(pid, session, children.get(pid, 0))
        for pid, (parent, session) in found.items()
        if parent not in found
    ]


def stop_session(server_side_session_id: str, proc: Path = Path("/proc")) -> int:
    """Stop the daemons of one server-side session; how many were stopped."""
    if not server_side_session_id:
        return 0
    stopped = [d for d in daemons(proc) if d.session == server_side_session_id]
    for daemon in stopped:
        _terminate(daemon.pid)
    if stopped:
        log.info(
            "stopped %d Python worker daemon(s) of ended session %s",
            len(stopped),
            server_side_session_id,
        )
    return len(stopped)


class IdleDaemons:
    """Stops daemons once they have had no worker for ``idle_s`` seconds (``sweep`` often)."""

    def __init__(self, idle_s: float, proc: Path = Path("/proc")) -> None:
        self.idle_s = idle_s
        self._proc = proc
        self._idle_since: dict[int, float] = {}

    def sweep(self, now: float | None = None, sessions: Collection[str] | None = None) -> int:
        """Look once; stop the daemons idle long enough (of ``sessions`` only, when given);
        how many were stopped."""
        now = time.monotonic() if now is None else now
        seen: dict[int, float] = {}
        stopped = 0
        for daemon in daemons(self._proc):
            if daemon.workers or (sessions is not None and daemon.session not in sessions):
                continue
            since = self._idle_since.get(daemon.pid, now)
            if now - since >= self.idle_s:
                _terminate(daemon.pid)
                stopped += 1
                continue
            seen[daemon.pid] = since
        self._idle_since = seen
        if stopped:
            log.info("stopped %d Python worker daemon(s) idle for %.0f s", stopped, self.idle_s)
        return stopped


async def sweep_idle(idle: IdleDaemons) -> None:
    """Sweep for idle daemons of every session for ever, a few times per idle period (at
    most once a minute): the Spark on this machine is the gateway's own, and a session that
    Spark expired, or that never scanned, has daemons too."""
    interval = sweep_interval(idle.idle_s)
    while True:
        await asyncio.sleep(interval)
        try:
            await asyncio.to_thread(idle.sweep)
        except OSError:
            log.exception("looking for idle Python worker daemons failed; trying again")


def sweep_interval(idle_s: float) -> float:
    """A few looks per idle period, at most a minute apart and at least a second."""
    return min(SWEEP_INTERVAL_S, max(idle_s / 4, 1.0))


async def learn_server_side_session(
    registry: SessionRegistry, session: Session, upstream: UpstreamSession
) -> None:
    """Record the server-side session whose Python workers the session's end stops.

    A registration command or a release is answered without a response that
    names it, so the upstream is asked (a call that creates nothing). A
    session Spark no longer knows stays unnamed: the idle sweep finds its
    daemons.
    """
    try:
        found = upstream.server_side_session_id or await upstream.current_server_side_session_id()
    except UpstreamFailed as exc:
        log.info("session %s: no server-side session to name: %s", session.session_id, exc)
        return
    registry.record_server_side_session(session, found)


def stop_ended(session: Session) -> int:
    """Stop the daemons of a session the gateway forgot (``SessionRelease``'s ``ended``)."""
    return stop_session(session.server_side_session_id)


def _processes(proc: Path) -> Iterator[tuple[int, bytes, bytes]]:
    """(pid, status, cmdline) of every process that can be read."""
    try:
        entries = list(os.scandir(proc))
    except OSError:
        return
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            status = (Path(entry.path) / "status").read_bytes()
            cmdline = (Path(entry.path) / "cmdline").read_bytes()
        except OSError:
            continue
        yield int(entry.name), status, cmdline


def _field(status: bytes, name: bytes) -> int | None:
    """The first number of a ``/proc/<pid>/status`` line (``PPid:``, ``Uid:``)."""
    start = status.find(b"\n" + name)
    if start < 0:
        return None
    line = status[start + len(name) + 1 :].split(b"\n", 1)[0].split()
    return int(line[0]) if line and line[0].isdigit() else None


def _session_of(process: Path) -> str | None:
    try:
        environment = (process / "environ").read_bytes()
    except OSError:
        return None
    for variable in environment.split(b"\0"):
        if variable.startswith(SESSION_VARIABLE):
            return variable[len(SESSION_VARIABLE) :].decode("ascii", "replace")
    return None


def _terminate(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    except PermissionError:
        log.warning("cannot stop Python worker daemon %d: not permitted", pid)
