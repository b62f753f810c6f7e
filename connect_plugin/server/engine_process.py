"""One engine started here: a Spark Connect server of one user or group, as ``--local`` starts.

An engine is the embedded server (``embedded``: the class archive, the
Python worker fork server) in a state folder of its own under
``<state_dir>/engines/``, with a driver of ``engine_driver_memory`` running
its tasks on ``engine_cores`` cores, and a random token of its own that only
the gateway holds (Spark's ``spark.connect.authenticate.token``, handed to
the JVM in its environment). Starting and stopping block for seconds: the
gateway calls them on worker threads.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import secrets
import signal
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from connect_plugin.config import Config
from connect_plugin.server.embedded import SERVER_CLASS, EmbeddedSparkConnect
from connect_plugin.spark_processes.class_archive import default_folder
from connect_plugin.upstream_url import UpstreamUrl, parse_upstream

log = logging.getLogger(__name__)

ENGINES_FOLDER = "engines"
GATEWAY_SETTING = "spark.connect_plugin.gateway"
"""The Spark setting that names, on an engine's command line, the gateway that started it
(``process_mark``)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_SHOWN_CHARACTERS = 32


def engine_folder(state_dir: Path, owner: str) -> Path:
    """The state folder of ``owner``'s engine: its name readable where it can be, and told
    apart from every other owner's by a digest of the whole name."""
    digest = hashlib.sha256(owner.encode("utf-8")).hexdigest()[:12]
    shown = _UNSAFE.sub("_", owner)[:_SHOWN_CHARACTERS]
    return state_dir / ENGINES_FOLDER / f"engine-{shown}-{digest}"


class LocalEngine:
    """The Spark Connect server of one owner, started on this machine."""

    def __init__(
        self,
        config: Config,
        owner: str,
        extra_conf: Mapping[str, str] | None = None,
        jvm_options: tuple[str, ...] = (),
    ) -> None:
        """``extra_conf``: Spark settings over ``spark-defaults.conf`` of the conf dir (the
        engine's memory is set over both); ``jvm_options``: added to the JVM's own."""
        self.owner = owner
        self.folder = engine_folder(config.state_dir, owner)
        conf = {
            **(extra_conf or {}),
            "spark.driver.memory": config.engine_driver_memory,
            GATEWAY_SETTING: process_mark(),
        }
        self._server = EmbeddedSparkConnect(
            conf_dir=config.conf_dir,
            host="127.0.0.1",
            master=f"local[{config.engine_cores}]",
            extra_conf=conf,
            state_dir=self.folder,
            token=secrets.token_urlsafe(32),
            class_archive=default_folder() if config.class_archive else None,
            worker_forks=config.worker_forks,
            jvm_options=jvm_options,
        )
        self._warm_up = config.warm_up
        self._timeout_s = config.upstream_start_timeout_s
        self.start_s = 0.0
        """How long the start took, until the JVM answered (0 until it started)."""

    @property
    def url(self) -> UpstreamUrl:
        """Where the gateway reaches it, with its token (never to be shown: see ``redacted``)."""
        return parse_upstream(self._server.client_address)

    @property
    def pid(self) -> int | None:
        return self._server.pid

    @property
    def running(self) -> bool:
        return self._server.running

    def start(self) -> None:
        """Start the JVM (blocks until it answers); with ``warm_up``, then run one scan on it
        on a thread of its own, beside the owner's first calls, which do not wait for it."""
        started = time.monotonic()
        self._server.start(timeout=self._timeout_s)
        self.start_s = time.monotonic() - started
        if self._warm_up:
            threading.Thread(
                target=self._warm, name="connect-plugin-engine-warm-up", daemon=True
            ).start()

    def _warm(self) -> None:
        from connect_plugin.spark_processes.warm_up import warm_up

        try:
            warm_up(self._server.client_address)
        except Exception as exc:
            if self.running:
                log.warning("warming up the engine of %r failed: %s", self.owner, exc)

    def stop(self) -> None:
        """Stop the JVM and everything it started (its process group, its fork server)."""
        self._server.stop()


def process_mark(pid: int | None = None, proc: Path = Path("/proc")) -> str:
    """``pid:start`` of a process (this one by default): its pid and its start time, which
    tell it apart from a later process given the same pid."""
    pid = os.getpid() if pid is None else pid
    start = (proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[19]
    return f"{pid}:{start}"


def _alive(mark: str, proc: Path) -> bool:
    pid, _, _ = mark.partition(":")
    try:
        return pid.isdigit() and process_mark(int(pid), proc) == mark
    except (OSError, IndexError):
        return False


def stop_strays(state_dir: Path, proc: Path = Path("/proc")) -> list[int]:
    """Kill the engines a gateway with this state folder left when it died (their process
    groups); the pids killed. Each engine names its gateway (``GATEWAY_SETTING``): one whose
    gateway still runs stays."""
    marker = str(state_dir / ENGINES_FOLDER).encode() + b"/"
    setting = f"{GATEWAY_SETTING}=".encode()
    killed = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
            if not any(SERVER_CLASS.encode() == w for w in words) or not any(
                marker in w for w in words
            ):
                continue
            marks = [w[len(setting) :].decode() for w in words if w.startswith(setting)]
            if marks and _alive(marks[0], proc):
                continue
            pid = int(entry.name)
            group = os.getpgid(pid)
        except (OSError, ValueError):
            continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
        log.warning("stopped engine pid %d, left running by a gateway that died", pid)
        killed.append(pid)
    return killed
