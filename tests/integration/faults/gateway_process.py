"""A gateway in a process of its own, so tests can SIGKILL it and start it again."""

from __future__ import annotations

import contextlib
import datetime
import os
import selectors
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from connect_plugin.server.embedded import free_port
from connect_plugin.server.sessions.workspace import PRIVATE_DIR, REGISTRY_FILE
from tests.integration.support import pause

READY_PREFIX = "connect-plugin gateway ready at "
DETACHED_TIMEOUT_S = 2.0
"""How long a statement the gateway runs goes on after its client's stream ended (its
``detached_timeout_s``): short, so that a client killed mid-write is soon seen gone."""
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0


@dataclass
class GatewayProcess:
    """``python -m connect_plugin.cli serve`` on a fixed port and workspace."""

    upstream: str
    workspace: Path
    port: int
    log_path: Path
    process: subprocess.Popen[str] | None = None
    starts: list[float] = field(default_factory=list)
    """Seconds from spawn to the ready line, one per start."""

    @property
    def address(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    @property
    def registry(self) -> Path:
        return self.workspace / PRIVATE_DIR / REGISTRY_FILE

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "connect_plugin.cli",
            "serve",
            "--upstream",
            self.upstream,
            "--port",
            str(self.port),
            "--workspace",
            str(self.workspace),
            "--log-level",
            "INFO",
        ]

    def spawn(self) -> subprocess.Popen[str]:
        env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
        env["CONNECT_PLUGIN_DETACHED_TIMEOUT_S"] = str(DETACHED_TIMEOUT_S)
        with self.log_path.open("a") as log:
            log.write(f"--- start {datetime.datetime.now().isoformat(timespec='milliseconds')}\n")
            log.flush()
            return subprocess.Popen(
                self.command(), stdout=subprocess.PIPE, stderr=log, text=True, env=env
            )

    def start(self, timeout: float = START_TIMEOUT_S) -> float:
        """Start and wait for the ready line; the seconds it took."""
        assert self.process is None or self.process.poll() is not None, "already running"
        began = time.monotonic()
        self.process = self.spawn()
        line = read_line(self.process, timeout)
        if not line.startswith(READY_PREFIX):
            self.kill()
            raise AssertionError(f"gateway did not start: {line!r}; log:\n{self.log_text()}")
        self.starts.append(time.monotonic() - began)
        return self.starts[-1]

    def kill(self) -> None:
        """SIGKILL, as an OOM killer or a pulled plug would."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(STOP_TIMEOUT_S)
        self._close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_TIMEOUT_S)
        self._close()

    def _close(self) -> None:
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()

    def log_text(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def rows(self, query: str, *args: object) -> list[tuple[object, ...]]:
        """Read the registry as a bystander would (read-only, the gateway may be running)."""
        with sqlite3.connect(f"file:{self.registry}?mode=ro", uri=True, timeout=10) as db:
            return db.execute(query, args).fetchall()

    def write(self, query: str, *args: object) -> None:
        """Change the registry while the gateway is down (to stage what a crash leaves)."""
        assert self.process is None or self.process.poll() is not None
        with sqlite3.connect(self.registry, timeout=10) as db:
            db.execute(query, args)


BIG_ROWS = 400
BIG_PAUSE = pause(25)
"""Each of the two tasks that write or change ``BIG_ROWS`` rows on this condition takes 5 s
or more: long enough to kill the gateway or the client in its middle, with the cores left
to other work."""
BIG_TABLE = (
    "CREATE TEMPORARY TABLE big AS SELECT id, sha2(CAST(id AS STRING), 256) AS h "
    f"FROM range(0, {BIG_ROWS}, 1, 2)"
)
"""A big table, made at once."""
BIG_CTTAS = f"{BIG_TABLE} WHERE {BIG_PAUSE}"
"""A big table, made slowly."""
BIG_UPDATE = f"UPDATE big SET h = upper(h) WHERE {BIG_PAUSE}"
"""A change of every row of the big table, made slowly."""
WRITE_START_TIMEOUT_S = 120.0
CLIENT_RECOVERY_TIMEOUT_S = 240.0


def writing(gateway: GatewayProcess) -> bool:
    """Whether Spark is writing the files of a table the registry has as ``creating``."""
    creating = gateway.rows("SELECT location FROM temp_tables WHERE state = 'creating'")
    return bool(creating) and any(Path(str(creating[0][0])).glob("_temporary/*"))


def read_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    try:
        if not selector.select(timeout):
            raise AssertionError(f"no line on stdout within {timeout} s")
    finally:
        selector.close()
    return process.stdout.readline().rstrip("\n")


def wait_until(condition: object, timeout: float, what: str, poll: float = 0.05) -> None:
    """Poll ``condition()`` until true; fail naming ``what`` after ``timeout`` seconds."""
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(poll)


def join_client(worker: threading.Thread, gateway: GatewayProcess) -> None:
    """Wait for a client thread that lived through a gateway restart; fail with where it
    waits and what the gateway logged since its last start."""
    worker.join(CLIENT_RECOVERY_TIMEOUT_S)
    if not worker.is_alive():
        return
    frame = sys._current_frames().get(worker.ident or 0)
    stack = "".join(traceback.format_stack(frame)) if frame is not None else "(no frame)"
    log = gateway.log_text().rsplit("--- start ", 1)[-1]
    raise AssertionError(
        f"the client did not come back within {CLIENT_RECOVERY_TIMEOUT_S} s of the gateway's "
        f"restart; it waits in:\n{stack}\ngateway log since the restart:\n{log[-6000:]}"
    )


@contextlib.contextmanager
def running_gateway(upstream: str, folder: Path) -> Iterator[GatewayProcess]:
    """A started gateway process, workspace and log under ``folder``; killed at the end."""
    process = GatewayProcess(
        upstream=upstream,
        workspace=folder / "workspace",
        port=free_port(),
        log_path=folder / "gateway.log",
    )
    process.start()
    try:
        yield process
    finally:
        process.kill()
