"""Python workers left behind by their daemon, among those of the test session's Spark.

The embedded server's Python worker daemons are forked by its worker fork
server (``connect_plugin.spark_processes.worker_forks``), a child of the test process, and
so are their workers: all of them run under the server's command line, which
names its socket. A process of that command line whose parent runs another
one (init, or a subreaper) is a worker whose daemon is gone.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

FORK_SERVER_MODULE = b"connect_plugin.spark_processes.worker_forks"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _parent(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return int(status.split("\nPPid:", 1)[1].split()[0])


def fork_server() -> tuple[int, bytes] | None:
    """The test session's worker fork server (a child of this process): its pid and the
    command line its forks share; None when it has none (a server elsewhere, no forks)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _parent(int(entry.name)) == os.getpid():
            cmdline = _cmdline(int(entry.name))
            if FORK_SERVER_MODULE in cmdline.split(b"\0"):
                return int(entry.name), cmdline
    return None


def strays(server: tuple[int, bytes]) -> list[int]:
    """The processes of the fork server's command line whose parent runs another one."""
    pid, cmdline = server
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == pid:
            continue
        if _cmdline(int(entry.name)) != cmdline:
            continue
        parent = _parent(int(entry.name))
        if parent is not None and _cmdline(parent) != cmdline and parent != pid:
            found.append(int(entry.name))
    return found


def settled_strays(server: tuple[int, bytes], timeout_s: float = 15.0) -> list[int]:
    """The strays once those that are dying have died (empty as soon as there are none)."""
    deadline = time.monotonic() + timeout_s
    found = strays(server)
    while found and time.monotonic() < deadline:
        time.sleep(0.2)
        found = strays(server)
    return found
