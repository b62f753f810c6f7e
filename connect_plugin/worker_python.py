"""``connect-plugin-python``: the interpreter of Spark's Python workers, starting from bytecode.

Spark puts its distribution's ``pyspark.zip`` first on its Python workers'
path. The zip holds no bytecode, so every worker daemon (three or four per
session) compiles pyspark anew: about half a second of CPU each. When this
interpreter's installed pyspark is the zip's own version, the launcher
takes the zip off ``PYTHONPATH`` and runs the interpreter with the same
arguments, so pyspark loads from site-packages, compiled once at install.
With any other pyspark (or none) the path stays as Spark set it.

When ``CONNECT_PLUGIN_FORK_SERVER`` names a worker fork server
(``connect_plugin.spark_processes.worker_forks``), a ``pyspark.daemon`` is forked by that
server instead, already loaded; this is its client half (``run_forked``),
kept here so that a launch imports only what it uses.

Point Spark at it with ``spark.pyspark.python`` (the embedded server and
the image do). It imports nothing but the standard library and never
imports pyspark itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import signal
import socket
import sys
import zipfile
from collections.abc import Mapping, Sequence
from typing import Any

ZIP_NAME = "pyspark.zip"
FORKS_VARIABLE = "CONNECT_PLUGIN_FORK_SERVER"
"""Names the worker fork server's socket (``connect_plugin.spark_processes.worker_forks``)."""
DAEMON = ("-m", "pyspark.daemon")
MESSAGE_BYTES = 1 << 20
"""The largest message between the launcher and the fork server (a daemon's environment)."""
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
_VERSION = re.compile(rb"""__version__\s*(?::\s*str\s*)?=\s*["']([^"']+)["']""")


def zip_version(path: str) -> str | None:
    """The pyspark version a ``pyspark.zip`` holds (None when it cannot be read)."""
    try:
        with zipfile.ZipFile(path) as archive:
            found = _VERSION.search(archive.read("pyspark/version.py"))
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    return found.group(1).decode() if found else None


def installed_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return None


def worker_path(python_path: str, installed: str | None) -> str:
    """``PYTHONPATH`` without the pyspark zips of the installed pyspark's version."""
    entries = python_path.split(os.pathsep) if python_path else []
    kept = [
        entry
        for entry in entries
        if not (
            installed is not None
            and os.path.basename(entry) == ZIP_NAME
            and zip_version(entry) == installed
        )
    ]
    return os.pathsep.join(kept)


def main(argv: Sequence[str] | None = None) -> None:
    """Run this interpreter with ``argv`` (the launcher's own by default), the zip off its path;
    a ``pyspark.daemon`` is forked by the worker fork server instead when one is named and
    takes it."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    environment = dict(os.environ)
    forks = environment.get(FORKS_VARIABLE)
    if forks and tuple(arguments[:2]) == DAEMON:
        code = run_forked(forks, arguments, environment)
        if code is not None:
            sys.exit(code)
    python_path = environment.get("PYTHONPATH", "")
    if ZIP_NAME in python_path:
        environment["PYTHONPATH"] = worker_path(python_path, installed_version())
    os.execve(sys.executable, [sys.executable, *arguments], environment)


def run_forked(path: str, arguments: Sequence[str], environment: Mapping[str, str]) -> int | None:
    """In the launcher: have the server at ``path`` fork the daemon ``arguments`` describe, with
    this process's standard streams; its exit code, or None when the server is not there or
    refuses (then nothing was started)."""
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sock.connect(path)
        request = {
            "arguments": list(arguments),
            "environment": dict(environment),
            "cwd": os.getcwd(),
        }
        socket.send_fds(sock, [json.dumps(request).encode()], [0, 1, 2])
    except OSError:
        return None
    reply = _receive(sock)
    if reply is None:
        print(
            "connect-plugin-python: the worker fork server ended before answering", file=sys.stderr
        )
        return 1
    if "refused" in reply:
        sock.close()
        return None
    pid = int(reply["pid"])
    for number in _FORWARDED:
        signal.signal(number, lambda received, _frame: send_signal(pid, received))
    status = _receive(sock)
    if status is not None:
        return int(status["exit"])
    _wait_for(pid)
    return 1


def _receive(sock: socket.socket) -> dict[str, Any] | None:
    try:
        message = sock.recv(MESSAGE_BYTES)
    except OSError:
        return None
    return json.loads(message) if message else None


def send_signal(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, number)


def _wait_for(pid: int) -> None:
    """Wait for a process that is not this one's child (the daemon, once its server is gone)."""
    try:
        handle = os.pidfd_open(pid)
    except OSError:
        return
    with selectors.DefaultSelector() as selector:
        selector.register(handle, selectors.EVENT_READ)
        selector.select()
    os.close(handle)


def launcher(python: str) -> str:
    """The ``connect-plugin-python`` beside ``python`` (same environment), else ``python``."""
    folder = os.path.dirname(python)
    candidate = os.path.join(folder, "connect-plugin-python")
    return candidate if os.access(candidate, os.X_OK) else python


if __name__ == "__main__":
    main()
