"""A gateway together with the Spark Connect server it fronts.

With ``config.local`` the upstream is an embedded server started here (and
warmed up with one scan, unless ``config.warm_up`` is off) and stopped with
the stack, or, with a share level other than ``server``, one such server per
user or group, which the gateway starts when needed (``engines``); otherwise ``config.upstream`` names a server someone
else runs. What a start can check without Spark (ports, files, the
workspace: ``start_checks``) is checked, and the workspace claimed, before
the embedded server starts. The CLI, the demo, the tests and the benchmarks
all start the same stack through this class.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from connect_plugin.config import Config
from connect_plugin.errors import ConfigError
from connect_plugin.server.embedded import EmbeddedSparkConnect
from connect_plugin.server.gateway import Gateway, serve
from connect_plugin.server.start_checks import Prepared, prepare
from connect_plugin.spark_processes.class_archive import default_folder
from connect_plugin.spark_processes.python_daemons import IdleDaemons
from connect_plugin.upstream_url import LOOPBACK_HOSTS

log = logging.getLogger(__name__)

class Stack:
    """Starts the upstream (when embedded) and the gateway; stops both."""

    def __init__(
        self,
        config: Config,
        *,
        extra_spark_conf: Mapping[str, str] | None = None,
        spark_log: Path | None = None,
        worker_python: Path | None = None,
        jvm_options: tuple[str, ...] = (),
    ) -> None:
        """``worker_python``: the interpreter of the embedded server's Python workers
        (``EmbeddedSparkConnect``'s ``python``; default: this one); ``jvm_options``: its
        JVM's options beside Spark's own."""
        self.config = config
        self._extra_spark_conf = dict(extra_spark_conf or {})
        self._jvm_options = jvm_options
        self.embedded: EmbeddedSparkConnect | None = None
        if config.local and config.share_level == "server":
            self.embedded = EmbeddedSparkConnect(
                conf_dir=config.conf_dir,
                host=config.upstream_bind_host,
                master=config.spark_master,
                extra_conf=extra_spark_conf,
                log_path=spark_log,
                state_dir=config.state_dir,
                token=_embedded_token(config.upstream_bind_host),
                class_archive=default_folder() if config.class_archive else None,
                worker_forks=config.worker_forks,
                python=worker_python,
                jvm_options=jvm_options,
            )
        self.gateway: Gateway | None = None
        self._prepared: Prepared | None = None
        self._stopping = threading.Event()
        self._sweeper: threading.Thread | None = None

    @property
    def upstream(self) -> str:
        """The ``sc://`` address of the Spark Connect server behind the gateway."""
        if self.embedded is not None:
            return self.embedded.address
        if self.config.upstream is None:
            raise ConfigError(f"each {self.config.share_level} has a Spark Connect server of its own")
        return self.config.upstream

    def start(self) -> Stack:
        """Check what needs no Spark and claim the workspace, start the embedded server (when
        there is one), then the gateway."""
        config = self.config
        try:
            self._prepared = prepare(config)
            if self.embedded is not None:
                self.embedded.start(timeout=config.upstream_start_timeout_s)
                if config.warm_up:
                    _warm_up(self.embedded.client_address)
                config = dataclasses.replace(
                    config,
                    local=False,
                    upstream=self.embedded.client_address,
                    stop_python_workers=True,
                )
                self._sweep_idle_daemons(config.python_worker_idle_s)
            elif config.local:
                config = dataclasses.replace(config, stop_python_workers=True)
            prepared, self._prepared = self._prepared, None
            self.gateway = serve(config, prepared, self._extra_spark_conf, self._jvm_options)
        except BaseException:
            self.stop()
            raise
        return self

    def _sweep_idle_daemons(self, idle_s: float) -> None:
        """Stop the embedded server's Python worker daemons idle for ``idle_s`` (0: never), on
        a thread of their own until the stack stops."""
        assert self.embedded is not None
        pid = self.embedded.pid
        if not idle_s or pid is None:
            return
        sweeps = IdleDaemons(idle_s, under=pid)
        embedded = self.embedded
        self._sweeper = threading.Thread(
            target=sweeps.run,
            args=(lambda: embedded.running, self._stopping),
            name="connect-plugin-idle-daemons",
            daemon=True,
        )
        self._sweeper.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._sweeper is not None:
            self._sweeper.join()
            self._sweeper = None
        if self.gateway is not None:
            self.gateway.stop()
            self.gateway = None
        try:
            if self.embedded is not None:
                self.embedded.stop()
        finally:
            if self._prepared is not None:
                self._prepared.release()
                self._prepared = None

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _embedded_token(host: str) -> str | None:
    """A random token that only this gateway holds, so that another local process that finds
    the embedded server's port cannot go around the gateway. A server bound beyond loopback
    gets none: Spark serves no TLS, and a token travels without TLS only over loopback."""
    if host not in LOOPBACK_HOSTS:
        log.warning(
            "the embedded Spark Connect server binds %s, beyond loopback: it takes calls "
            "without a token from anyone who reaches it",
            host,
        )
        return None
    return secrets.token_urlsafe(32)


WARM_UP_TIMEOUT_S = 120.0
"""The longest the ready line waits for the warm-up."""


def _warm_up(address: str) -> None:
    """Warm the embedded server; a failure or a hang costs the first user time, never the
    start (a warm-up still running after ``WARM_UP_TIMEOUT_S`` goes on beside serving)."""
    from connect_plugin.spark_processes.warm_up import warm_up

    def run() -> None:
        try:
            warm_up(address)
        except Exception:
            log.exception("warming up the embedded server failed; serving without")

    thread = threading.Thread(target=run, name="connect-plugin-warm-up", daemon=True)
    thread.start()
    thread.join(WARM_UP_TIMEOUT_S)
    if thread.is_alive():
        log.warning("the warm-up took over %.0f s; serving without waiting for it", WARM_UP_TIMEOUT_S)
