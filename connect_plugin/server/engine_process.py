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
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import connect_plugin
from connect_plugin.config import Config
from connect_plugin.server.embedded import (
    SERVER_CLASS,
    SPARK_DEFAULTS,
    EmbeddedSparkConnect,
    find_java,
    spark_home,
)
from connect_plugin.server.engine_users import (
    EngineUser,
    own_folder,
    passable_folder,
    prepare_as,
)
from connect_plugin.server.sessions.private_files import private_folder
from connect_plugin.spark_processes.class_archive import default_folder
from connect_plugin.upstream_url import UpstreamUrl, parse_upstream
from connect_plugin.worker_python import launcher

log = logging.getLogger(__name__)

ENGINES_FOLDER = "engines"
GATEWAY_SETTING = "spark.connect_plugin.gateway"
"""The Spark setting that names, on an engine's command line, the gateway that started it
(``process_mark``)."""
TEMP_FOLDER = "tmp"
LOGS_FOLDER = "logs"
CLASSES_SUFFIX = ".jvm-classes"
OWN_USER_CONF = {
    "spark.authenticate": "true",
    "spark.ui.enabled": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
}
"""Spark settings of an engine run as a user of its own: its driver's RPC and block transfers
take only calls that carry the secret Spark draws at start (local mode draws one), no web UI
(which has no authentication), and nothing bound beyond loopback."""
NO_PERF_DATA = "-XX:-UsePerfData"
"""Engines run as users of their own leave nothing in the shared temporary folder: without it,
their JVMs (the driver and spark-submit's launcher) keep ``/tmp/hsperfdata_<user>``."""
LAUNCHER_OPTIONS = "SPARK_LAUNCHER_OPTS"
"""The options of the small JVM ``spark-submit`` runs first to build the driver's command."""
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
        os_user: EngineUser | None = None,
    ) -> None:
        """``extra_conf``: Spark settings over ``spark-defaults.conf`` of the conf dir (the
        engine's memory is set over both); ``jvm_options``: added to the JVM's own;
        ``os_user``: the operating-system user it runs as (``engine_users``; the caller is
        root), whose own are its state folder, its temporary folder (Java's, Spark's local
        dir, Python's), its Ivy cache and its class archive; its log is
        root's."""
        self.owner = owner
        self.os_user = os_user
        self.folder = engine_folder(config.state_dir, owner)
        self._config = config
        conf = {
            **(extra_conf or {}),
            "spark.driver.memory": config.engine_driver_memory,
            GATEWAY_SETTING: process_mark(),
        }
        archive = default_folder() if config.class_archive else None
        temp = self.folder / TEMP_FOLDER
        log_path = None
        extra_env: dict[str, str] = {}
        if os_user is not None:
            conf.update(OWN_USER_CONF)
            conf["spark.local.dir"] = str(temp)
            conf["spark.jars.ivy"] = str(self.folder / "ivy")
            jvm_options = (
                *jvm_options,
                f"-Djava.io.tmpdir={temp}",
                f"-Duser.home={self.folder}",
                NO_PERF_DATA,
            )
            extra_env = {
                LAUNCHER_OPTIONS: " ".join((os.environ.get(LAUNCHER_OPTIONS, ""), NO_PERF_DATA)),
                "HOME": str(self.folder),
                "TMPDIR": str(temp),
                "USER": os_user.name,
                "LOGNAME": os_user.name,
            }
            if archive is not None:
                archive = self.folder.with_name(self.folder.name + CLASSES_SUFFIX)
            log_path = self.folder.parent / LOGS_FOLDER / f"{self.folder.name}.log"
        self._archive = archive
        self._server = EmbeddedSparkConnect(
            conf_dir=config.conf_dir,
            host="127.0.0.1",
            master=f"local[{config.engine_cores}]",
            extra_conf=conf,
            log_path=log_path,
            state_dir=self.folder,
            token=secrets.token_urlsafe(32),
            class_archive=archive,
            worker_forks=config.worker_forks,
            jvm_options=jvm_options,
            run_as=None if os_user is None else os_user.ids,
            extra_env=extra_env,
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
        if self.os_user is not None:
            self._prepare_folders(self.os_user)
        self._server.start(timeout=self._timeout_s)
        self.start_s = time.monotonic() - started
        if self._warm_up:
            threading.Thread(
                target=self._warm, name="connect-plugin-engine-warm-up", daemon=True
            ).start()

    def _prepare_folders(self, user: EngineUser) -> None:
        """Root's folders on the way, the user's own below them, and a check, as the user,
        that it reaches what its JVM and Python workers run."""
        engines = self.folder.parent
        passable_folder(engines)
        private_folder(engines / LOGS_FOLDER)
        own_folder(self.folder, user)
        if self._archive is not None:
            own_folder(self._archive, user)
        java, _ = find_java()
        home = spark_home()
        conf_dir = self._config.conf_dir
        readable = [home / "jars", Path(connect_plugin.__file__).parent]
        if conf_dir is not None and (conf_dir / SPARK_DEFAULTS).is_file():
            readable.append(conf_dir / SPARK_DEFAULTS)
        prepare_as(
            user,
            self.owner,
            folders=[self.folder / TEMP_FOLDER],
            readable=readable,
            runnable=[
                java,
                home / "bin" / "spark-submit",
                Path(launcher(sys.executable)),
                Path(sys.executable),
                self._config.workspace,
            ],
        )

    def _warm(self) -> None:
        from connect_plugin.spark_processes.warm_up import warm_up

        try:
            if self.os_user is None:
                warm_up(self._server.client_address)
            else:
                warm_up(
                    self._server.client_address, self.folder / TEMP_FOLDER, self.os_user.ids
                )
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
