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
- ``IdleDaemons``: the daemons under one Spark process (``--local``'s
  embedded server; beside a Spark process that runs without a gateway,
  ``connect-plugin stop-idle-python-workers``, as the image's worker and
  connect roles do) that have had no worker for ``idle_s`` seconds, of any
  session: one Spark expired, or whose id the gateway never learnt, has
  daemons too. Spark reaps a daemon's idle workers after a minute and starts
  a new daemon when a later task finds the old one gone, so a stopped daemon
  of a live session costs that session a daemon start (should a task ask the
  daemon for a worker in the instant it stops, that task fails and Spark
  retries it).

Only daemons of this user (or of the users named) are looked at; a daemon gets ``SIGTERM``, on which
it stops its workers and exits.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 60.0
"""The longest wait between two looks for idle daemons."""

DAEMON_MODULE = b"pyspark.daemon"
FORK_SERVER_MODULE = b"connect_plugin.spark_processes.worker_forks"
SESSION_VARIABLE = b"SPARK_JOB_ARTIFACT_UUID="


@dataclass(frozen=True)
class Daemon:
    """One ``pyspark.daemon`` process: its pid, its session and how many workers it has."""

    pid: int
    session: str
    workers: int
    forked: int | None = None
    """The process that runs the daemon when the worker fork server forked it (``pid`` is
    then its launcher, the process Spark started)."""
    ran: tuple[int, ...] | None = None
    """What the daemon's ended workers have used: the minor faults and processor ticks of
    the children it reaped (``/proc/<pid>/stat``). A worker that started and ended between
    two looks changes it."""


def daemons(
    proc: Path = Path("/proc"), under: int | None = None, uids: Collection[int] | None = None
) -> list[Daemon]:
    """This user's Python worker daemons (those of ``uids``' users when given: a gateway run
    as root, whose engines run as users of their own), from ``/proc`` (none where there is
    no ``/proc``); with ``under``, only those descending from that process (a Spark JVM).

    A daemon's workers are forks of it, with its command line and
    environment: they count as its workers, not as daemons. A daemon the
    worker fork server (``connect_plugin.spark_processes.worker_forks``) forked is known by
    its launcher, the process Spark started, which has the daemon's command
    line and environment; the workers are the forked daemon's.
    """
    wanted = {os.getuid()} if uids is None else set(uids)
    parents: dict[int, int] = {}
    children: dict[int, int] = {}
    found: dict[int, str] = {}
    fork_servers: set[int] = set()
    for pid, status, cmdline in _processes(proc):
        parent = _field(status, b"PPid:")
        if parent is not None:
            parents[pid] = parent
            children[parent] = children.get(parent, 0) + 1
        if _field(status, b"Uid:") not in wanted:
            continue
        arguments = cmdline.split(b"\0")
        if FORK_SERVER_MODULE in arguments:
            fork_servers.add(pid)
        if DAEMON_MODULE not in arguments:
            continue
        session = _session_of(proc / str(pid))
        if session is not None:
            found[pid] = session
    forked: dict[str, int] = {}
    for pid, parent in parents.items():
        reads = _standard_input(proc / str(pid)) if parent in fork_servers else None
        if reads is not None:
            forked[reads] = pid

    def daemon(pid: int, session: str) -> Daemon:
        reads = _standard_input(proc / str(pid))
        runs = forked.get(reads) if reads is not None else None
        workers = children.get(pid, 0) + (children.get(runs, 0) if runs is not None else 0)
        ran = _reaped(proc / str(pid if runs is None else runs))
        return Daemon(pid, session, workers, runs, ran)

    return [
        daemon(pid, session)
        for pid, session in found.items()
        if parents.get(pid) not in found and (under is None or _descends(pid, under, parents))
    ]


def _standard_input(process: Path) -> str | None:
    """The pipe a process reads from (``pipe:[inode]``): a launcher and the daemon the fork
    server forked for it read Spark's same pipe. Anything else (``/dev/null``, a terminal)
    is shared by unrelated processes and names none."""
    try:
        reads = os.readlink(process / "fd" / "0")
    except OSError:
        return None
    return reads if reads.startswith("pipe:") else None


def descendants(ancestor: int, proc: Path = Path("/proc")) -> list[int]:
    """The pids of every process descending from ``ancestor`` (from ``/proc``)."""
    parents = {}
    for pid, status, _ in _processes(proc):
        parent = _field(status, b"PPid:")
        if parent is not None:
            parents[pid] = parent
    return [pid for pid in parents if _descends(pid, ancestor, parents)]


def _reaped(process: Path) -> tuple[int, ...] | None:
    """A process's reaped children's minor faults, user and system ticks (``cminflt``,
    ``cutime``, ``cstime`` of ``/proc/<pid>/stat``)."""
    try:
        stat = (process / "stat").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return tuple(int(fields[i]) for i in (8, 13, 14))
    except (IndexError, ValueError):
        return None


def _descends(pid: int, ancestor: int, parents: dict[int, int]) -> bool:
    seen = set()
    while pid in parents and pid not in seen:
        seen.add(pid)
        pid = parents[pid]
        if pid == ancestor:
            return True
    return False


def stop_session(
    server_side_session_id: str,
    proc: Path = Path("/proc"),
    level: int = logging.INFO,
    uids: Collection[int] | None = None,
) -> int:
    """Stop the daemons of one server-side session (of ``uids``' users when given, as
    ``daemons``); how many were stopped (logged at ``level``: a session of the gateway's own
    is no news to an operator)."""
    if not server_side_session_id:
        return 0
    stopped = [d for d in daemons(proc, uids=uids) if d.session == server_side_session_id]
    for daemon in stopped:
        _terminate(daemon.pid)
    if stopped:
        log.log(
            level,
            "stopped %d Python worker daemon(s) of ended session %s",
            len(stopped),
            server_side_session_id,
        )
    return len(stopped)


class IdleDaemons:
    """Stops the daemons under one Spark process once they have had no worker for ``idle_s``
    seconds (``sweep`` often). A daemon is idle from a look that finds it with no worker
    and no worker ended since the look before (short tasks start and end workers between
    looks). Daemons of other Spark processes of the same user (another server, a
    notebook's pyspark) are never looked at."""

    def __init__(self, idle_s: float, under: int, proc: Path = Path("/proc")) -> None:
        self.idle_s = idle_s
        self.under = under
        self._proc = proc
        self._idle_since: dict[int, tuple[float, tuple[int, ...] | None]] = {}

    def sweep(self, now: float | None = None) -> int:
        """Look once; stop the daemons idle long enough; how many were stopped."""
        now = time.monotonic() if now is None else now
        seen: dict[int, tuple[float, tuple[int, ...] | None]] = {}
        stopped = 0
        for daemon in daemons(self._proc, self.under):
            if daemon.workers:
                continue
            since, ran = self._idle_since.get(daemon.pid, (now, daemon.ran))
            if ran != daemon.ran:
                since = now
            if now - since >= self.idle_s:
                _terminate(daemon.pid)
                stopped += 1
                continue
            seen[daemon.pid] = (since, daemon.ran)
        self._idle_since = seen
        if stopped:
            log.info("stopped %d Python worker daemon(s) idle for %.0f s", stopped, self.idle_s)
        return stopped

    def run(self, alive: Callable[[], bool], stop: threading.Event) -> None:
        """Sweep a few times per idle period (at most a minute apart) while ``alive()``, until
        ``stop`` is set; a failed look is logged and tried again."""
        interval = sweep_interval(self.idle_s)
        swept = time.monotonic() - interval
        while alive() and not stop.is_set():
            if time.monotonic() - swept >= interval:
                try:
                    self.sweep()
                except OSError:
                    log.exception("looking for idle Python worker daemons failed; trying again")
                swept = time.monotonic()
            stop.wait(min(interval, 1.0))


def sweep_interval(idle_s: float) -> float:
    """A few looks per idle period, at most a minute apart and at least a second."""
    return min(SWEEP_INTERVAL_S, max(idle_s / 4, 1.0))


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
