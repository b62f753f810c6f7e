"""The gateway process: a grpc.aio server in front of a Spark Connect server.

``serve(config)`` starts the server on an event loop of its own thread and
returns at once; blocking until a signal is the CLI's business. Before it
listens, the gateway claims its workspace (one gateway per workspace) and
repairs what a previous run left half-done (see ``recovery``); while it
serves, a sweeper expires idle sessions and drops the tables of sessions the
upstream lost (see ``expiry``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from connect_plugin.config import Config
from connect_plugin.errors import ConfigError
from connect_plugin.server.channels import server_options, upstream_channel
from connect_plugin.server.clone import Cloner
from connect_plugin.server.create import TableCreator
from connect_plugin.server.expiry import SessionWatch
from connect_plugin.server.forwarding import SERVICE_NAME, Forwarder, plan_methods
from connect_plugin.server.guards import (
    AlterViewHandler,
    CreatePersistentViewHandler,
    CreateTempViewHandler,
    DropViewHandler,
    InsertIntoHandler,
)
from connect_plugin.server.handlers import HandlerRegistry
from connect_plugin.server.intercept import PluginHandlers
from connect_plugin.server.quotas import Quotas
from connect_plugin.server.recovery import Recovery
from connect_plugin.server.rejects import RejectsTables
from connect_plugin.server.release import SessionRelease
from connect_plugin.server.scan_views import CreateScanViewHandler
from connect_plugin.server.scans import ScanHandler, Scans
from connect_plugin.server.session_store import SqliteSessionStore
from connect_plugin.server.sessions import SessionRegistry, admit_request
from connect_plugin.server.table_handlers import (
    CreateTempTableHandler,
    DropTempTableHandler,
    ListTempTablesHandler,
    ReadTempTableHandler,
)
from connect_plugin.server.tables import Tables
from connect_plugin.server.upstream import Upstream
from connect_plugin.server.workspace import REGISTRY_FILE, Workspace, WorkspaceLock

log = logging.getLogger(__name__)


class Gateway:
    """A running gateway: where it listens, what it forwarded, how to stop it."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="connect-plugin-gateway", daemon=True
        )
        self._server: grpc.aio.Server | None = None
        self._channel: grpc.aio.Channel | None = None
        self._health: Any = None
        self._stopped = threading.Event()
        self.forwarder: Forwarder | None = None
        self.sessions: SessionRegistry | None = None
        self.recovery: Recovery | None = None
        self.watch: SessionWatch | None = None
        self._workspace_lock: WorkspaceLock | None = None

    @property
    def address(self) -> str:
        """The ``sc://`` URL clients connect to."""
        return f"sc://{self.config.host}:{self.port}"

    def calls(self, method: str) -> int:
        """How many calls of ``method`` the gateway has forwarded."""
        return 0 if self.forwarder is None else self.forwarder.calls[method]

    def start(self) -> Gateway:
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()
        except BaseException:
            self.stop()
            raise
        return self

    async def _start(self) -> None:
        config = self.config
        self._channel = upstream_channel(config)
        upstream = Upstream(self._channel)
        workspace = Workspace(config.workspace)
        self._workspace_lock = workspace.lock(config.registry_path)
        store = SqliteSessionStore(
            config.registry_path or workspace.private_folder / REGISTRY_FILE
        )
        self.sessions = registry = SessionRegistry(store)
        release = SessionRelease(registry, workspace)
        self.recovery = Recovery(config, registry, workspace, upstream, release)
        await self.recovery.run()
        handlers = PluginHandlers(
            config,
            registry,
            upstream,
            plugin_handlers(config, registry, workspace, upstream),
            Cloner(registry, workspace, upstream, release, Quotas(config, registry)),
            release,
        )
        self.watch = SessionWatch(config, registry, upstream, release)
        self.forwarder = Forwarder(
            self._channel,
            hooks=handlers.hooks(plan_methods()),
            observer=self.watch,
            admit=admit_request,
        )
        server = grpc.aio.server(options=server_options(self.config))
        server.add_generic_rpc_handlers((self.forwarder.handler(),))
        self._health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        try:
            self.port = server.add_insecure_port(f"{self.config.host}:{self.config.port}")
        except RuntimeError as exc:
            raise ConfigError(
                f"the gateway cannot listen on {self.config.host}:{self.config.port} ({exc}); "
                "choose another --port"
            ) from exc
        await server.start()
        self._server = server
        await self.watch.start()
        serving = health_pb2.HealthCheckResponse.SERVING
        await self._health.set("", serving)
        await self._health.set(SERVICE_NAME, serving)
        log.info("gateway listening on %s:%d -> %s", self.config.host, self.port, self.config.upstream)

    def stop(self, grace: float | None = None) -> None:
        """Stop serving (finishing in-flight calls for ``grace`` seconds) and close."""
        if self._stopped.is_set():
            return
        if self._loop.is_running():
            grace_s = self.config.shutdown_grace_s if grace is None else grace
            asyncio.run_coroutine_threadsafe(self._stop(grace_s), self._loop).result()
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
        self._loop.close()
        self._stopped.set()

    async def _stop(self, grace: float) -> None:
        if self._health is not None:
            await self._health.enter_graceful_shutdown()
        if self._server is not None:
            await self._server.stop(grace)
        try:
            if self.watch is not None:
                await self.watch.stop()
            if self.recovery is not None:
                await self.recovery.stop()
        finally:
            try:
                if self.sessions is not None:
                    self.sessions.close()
            finally:
                if self._workspace_lock is not None:
                    self._workspace_lock.release()
                if self._channel is not None:
                    await self._channel.close()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the gateway has stopped; False on timeout."""
        return self._stopped.wait(timeout)


def plugin_handlers(
    config: Config, registry: SessionRegistry, workspace: Workspace, upstream: Upstream
) -> HandlerRegistry:
    """Every handler of the gateway: one per plugin message, statement and guarded command."""
    tables = Tables(config, registry, workspace, upstream)
    creator = TableCreator(config, registry, workspace, upstream)
    rejects = RejectsTables(creator, tables, upstream)
    scans = Scans(registry, tables, upstream, rejects)
    return HandlerRegistry(
        [
            CreateTempTableHandler(creator),
            DropTempTableHandler(tables),
            ListTempTablesHandler(tables),
            ReadTempTableHandler(tables),
            ScanHandler(scans),
            DropViewHandler(config, tables),
            InsertIntoHandler(tables),
            CreateScanViewHandler(scans, tables, upstream),
            CreateTempViewHandler(tables),
            CreatePersistentViewHandler(tables),
            AlterViewHandler(tables),
        ]
    )


def serve(config: Config) -> Gateway:
    """Start a gateway for ``config`` and return it running; never blocks."""
    if config.upstream is None:
        raise ConfigError("the gateway needs an upstream Spark Connect server (sc://host:port)")
    return Gateway(config).start()
