"""The gateway process: a grpc.aio server in front of a Spark Connect server.

``serve(config)`` starts the server on an event loop of its own thread and
returns at once; blocking until a signal is the CLI's business. Before it
listens, the gateway claims its workspace (one gateway per workspace) and
repairs what a previous run left half-done (see ``recovery``); while it
serves, a sweeper expires idle sessions and drops the tables of sessions the
upstream lost (see ``expiry``). With a share level other than ``server``,
each user's or group's calls go to an engine of its own (see ``engines``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import grpc
from google.protobuf.message import Message
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from connect_plugin.config import Config
from connect_plugin.errors import ConfigError, NoEngine
from connect_plugin.server.detached import Answers, Detached, FollowUps
from connect_plugin.server.engines import Engines
from connect_plugin.server.intercept import PluginHandlers
from connect_plugin.server.monitoring.audit import AuditLog
from connect_plugin.server.scans.rejects import RejectsTables
from connect_plugin.server.scans.relation import ScanHandler, Scans
from connect_plugin.server.scans.scan_rows import ScanRows
from connect_plugin.server.scans.scan_sessions import ScanSessions
from connect_plugin.server.scans.scan_views import CreateScanViewHandler
from connect_plugin.server.sessions.clone import Cloner
from connect_plugin.server.sessions.expiry import SessionWatch
from connect_plugin.server.sessions.quotas import Quotas
from connect_plugin.server.sessions.recovery import Recovery
from connect_plugin.server.sessions.registry import SessionRegistry, admit_request
from connect_plugin.server.sessions.release import SessionRelease, stop_ended
from connect_plugin.server.sessions.store import SqliteSessionStore
from connect_plugin.server.sessions.workspace import REGISTRY_FILE, Workspace, WorkspaceLock
from connect_plugin.server.start_checks import Prepared, prepare
from connect_plugin.server.statements.config_guard import screen_substitutions
from connect_plugin.server.statements.handlers import HandlerRegistry, SqlOrder
from connect_plugin.server.table_files.writes import stop_late_watches
from connect_plugin.server.tables.catalog import Tables
from connect_plugin.server.tables.create import TableCreator
from connect_plugin.server.tables.guards import (
    AlterViewHandler,
    CreatePersistentViewHandler,
    CreateTempViewHandler,
    DropViewHandler,
)
from connect_plugin.server.tables.inserts import InsertIntoHandler
from connect_plugin.server.tables.qualifier_database import warn_at_start
from connect_plugin.server.tables.rewrites import TableRewriter
from connect_plugin.server.tables.row_changes import (
    DeleteHandler,
    MergeHandler,
    TruncateHandler,
    UpdateHandler,
)
from connect_plugin.server.tables.table_handlers import (
    CreateTempTableHandler,
    DropTempTableHandler,
    ListTempTablesHandler,
    ReadTempTableHandler,
)
from connect_plugin.server.transport.auth import TokenAuthenticator
from connect_plugin.server.transport.channels import server_options, upstream_channel
from connect_plugin.server.transport.forwarding import Forwarder
from connect_plugin.server.transport.interception import Refusal
from connect_plugin.server.transport.service import SERVICE_NAME, plan_methods
from connect_plugin.server.transport.upstream import Upstream
from connect_plugin.server.transport.upstream_token import UpstreamToken

if TYPE_CHECKING:
    from connect_plugin.server.monitoring.metrics import GatewayMetrics

log = logging.getLogger(__name__)


class Gateway:
    """A running gateway: where it listens, what it forwarded, how to stop it."""

    def __init__(
        self,
        config: Config,
        prepared: Prepared | None = None,
        engine_conf: Mapping[str, str] | None = None,
        engine_jvm_options: tuple[str, ...] = (),
    ) -> None:
        """``prepared``: what ``start_checks.prepare`` checked and claimed for this gateway,
        which it then owns (None: ``start`` runs the checks); ``engine_conf`` and
        ``engine_jvm_options``: Spark settings and JVM options of the engines it starts."""
        self.config = config
        self._engine_conf = dict(engine_conf or {})
        self._engine_jvm_options = engine_jvm_options
        self.engines: Engines | None = None
        """Each user's or group's Spark Connect server (share level user or group)."""
        self._prepared = prepared
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
        self.detached: Detached | None = None
        """The statements it runs itself that a client may reattach to."""
        self.follow_ups: FollowUps | None = None
        """Follow-ups of Spark's executions, for whichever of their streams sees them end."""
        self.answers: Answers | None = None
        """The gateway's own answers, kept for a stream that reattaches to them."""
        self._workspace_lock: WorkspaceLock | None = (
            None if prepared is None else prepared.workspace_lock
        )
        self.authenticator: TokenAuthenticator | None = None
        self.upstream_token: UpstreamToken | None = None
        self.metrics: GatewayMetrics | None = None
        self.audit: AuditLog | None = None if prepared is None else prepared.audit
        self._stop_metrics: Callable[[], None] | None = None
        self._qualifier_check: asyncio.Future[None] | None = None

    @property
    def address(self) -> str:
        """The ``sc://`` URL clients connect to (without any token: clients bring their own)."""
        base = f"sc://{self.config.host}:{self.port}"
        return f"{base}/;use_ssl=true" if self.config.tls_cert_file is not None else base

    def _serve_metrics(self, registry: SessionRegistry) -> GatewayMetrics | None:
        """With ``metrics_port``, the metrics, served on the gateway's own address."""
        if self.config.metrics_port is None:
            return None
        from connect_plugin.server.monitoring.metrics import GatewayMetrics

        metrics = GatewayMetrics()
        metrics.watch(registry)
        self._stop_metrics = metrics.serve(self.config.host, self.config.metrics_port)
        self.metrics = metrics
        return metrics

    def _refusal_listener(self, metrics: GatewayMetrics | None) -> Refusal | None:
        """Who hears of the calls the gateway refuses: the metrics and the audit log."""
        audit = self.audit
        if metrics is None and audit is None:
            return None

        def refused(method: str, reason: BaseException, message: Message | None) -> None:
            if metrics is not None:
                metrics.refused(reason)
            if audit is not None:
                audit.refused(method, reason, message)

        return refused

    def reload_tokens(self) -> bool:
        """Re-read the client tokens file and the upstream token file (SIGHUP); False when
        there is neither or a new one is bad (which keeps its previous tokens)."""
        files = [found for found in (self.authenticator, self.upstream_token) if found is not None]
        return bool(files) and all([found.reload() for found in files])

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
        prepared = self._prepared or prepare(config)
        self._prepared = None
        self._workspace_lock, self.audit = prepared.workspace_lock, prepared.audit
        credentials = prepared.credentials
        self.authenticator = prepared.authenticator
        self.upstream_token = prepared.upstream_token
        if config.share_level == "server":
            self._channel = upstream_channel(config, self.upstream_token)
            upstream = Upstream(self._channel)
        else:
            self.engines = self._engines()
            upstream = Upstream(None, self.engines.channel_now)
        engines = self.engines
        workspace = Workspace(
            config.workspace, None if engines is None else _engine_ids(engines)
        )
        store = SqliteSessionStore(
            config.registry_path or workspace.private_folder / REGISTRY_FILE
        )
        self.sessions = registry = SessionRegistry(store)
        stopping = config.stop_python_workers
        ended = stop_ended
        if engines is not None and engines.os_users:
            ended = functools.partial(stop_ended, uids=engines.os_uids())
        release = SessionRelease(registry, workspace, ended if stopping else None)
        self.recovery = Recovery(config, registry, workspace, upstream, release)
        await self.recovery.run()
        metrics = self._serve_metrics(registry)
        scan_sessions = ScanSessions(registry)
        handlers = PluginHandlers(
            config,
            registry,
            upstream,
            plugin_handlers(
                config,
                registry,
                workspace,
                upstream,
                None if metrics is None else metrics.bad_record,
                scan_sessions,
            ),
            scan_sessions,
            Cloner(registry, workspace, upstream, release, Quotas(config, registry)),
            release,
            self.audit,
            None if metrics is None else metrics.statement,
            None if metrics is None else ScanRows(metrics.scanned, metrics.bad_record),
        )
        self.detached = handlers.statements.running
        self.follow_ups = handlers.statements.follow_ups
        self.answers = handlers.statements.answers
        self.watch = SessionWatch(config, registry, upstream, release)
        if self.engines is not None:
            engines = self.engines
            if metrics is not None:
                engines.listener = metrics
                metrics.watch_engines(lambda: (engines.running, engines.starting))
            await engines.start()
        if metrics is not None:
            metrics.watch_actions(self.watch.figures, self.recovery)
        self.forwarder = Forwarder(
            self._channel,
            hooks=handlers.hooks(plan_methods()),
            observer=self.watch,
            admit=admit_request,
            authenticate=None if self.authenticator is None else self.authenticator.authenticate,
            metrics=metrics,
            refusal=self._refusal_listener(metrics),
            screen=screen_substitutions,
            route=None if self.engines is None else self.engines.route,
        )
        server = grpc.aio.server(options=server_options(self.config))
        server.add_generic_rpc_handlers((self.forwarder.handler(),))
        self._health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        try:
            where = f"{self.config.host}:{self.config.port}"
            if credentials is None:
                self.port = server.add_insecure_port(where)
            else:
                self.port = server.add_secure_port(where, credentials)
        except RuntimeError as exc:
            raise ConfigError(
                f"the gateway cannot listen on {self.config.host}:{self.config.port} ({exc}); "
                "choose another --port"
            ) from exc
        await server.start()
        self._server = server
        await self.watch.start()
        if self.engines is None:
            self._qualifier_check = asyncio.ensure_future(
                warn_at_start(upstream, config.recovery_timeout_s)
            )
        serving = health_pb2.HealthCheckResponse.SERVING
        await self._health.set("", serving)
        await self._health.set(SERVICE_NAME, serving)
        log.info(
            "gateway listening on %s -> %s%s",
            self.address,
            config.upstream_url.redacted
            if self.engines is None
            else f"an engine per {config.share_level}",
            "" if self.authenticator is None else f" (tokens of {len(self.authenticator.users)} users)",
        )

    def _engines(self) -> Engines:
        """The engines of share level user or group, which end their sessions when they go."""
        authenticator = self.authenticator
        if authenticator is None:
            raise ConfigError(f"share_level {self.config.share_level} needs auth_tokens_file")
        gateway = self

        async def lost(owner: str, reason: str) -> None:
            engines, watch = gateway.engines, gateway.watch
            if engines is not None and watch is not None:
                await watch.engine_lost(lambda user: _owns(engines, user, owner), reason)

        def busy_users() -> set[str]:
            return set() if self.sessions is None else self.sessions.busy_users()

        return Engines(
            self.config,
            authenticator.group_of,
            busy_users,
            lost,
            self._engine_conf,
            self._engine_jvm_options,
        )

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
        if self.detached is not None:
            await self.detached.stop()
        if self.engines is not None:
            await self.engines.stop()
        if self._stop_metrics is not None:
            self._stop_metrics()
        if self._qualifier_check is not None:
            self._qualifier_check.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._qualifier_check
        if self.audit is not None:
            self.audit.close()
        await stop_late_watches()
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


SQL_ORDER: SqlOrder = {
    # CREATE TEMPORARY VIEW v USING scan OPTIONS (...) is a temp view's statement
    # too, so the scan view reads it before the temp-view guard; the other rules of
    # CREATE take statements no other one does.
    "CREATE": (
        CreateTempTableHandler,
        CreateScanViewHandler,
        CreateTempViewHandler,
        CreatePersistentViewHandler,
    ),
    # DROP TABLE and DROP VIEW: disjoint, ordered only because they share DROP.
    "DROP": (DropTempTableHandler, DropViewHandler),
}
"""The order the rules of handlers sharing a first keyword are tried in (see ``handlers``)."""


def plugin_handlers(
    config: Config,
    registry: SessionRegistry,
    workspace: Workspace,
    upstream: Upstream,
    bad_records: Callable[[str, int], None] | None = None,
    scan_sessions: ScanSessions | None = None,
) -> HandlerRegistry:
    """Every handler of the gateway: one per plugin message, statement and guarded command
    (``bad_records`` hears the records the rejects tables took, with the metrics on;
    ``scan_sessions``: what the scans keep of each session, made here if not given)."""
    tables = Tables(config, registry, workspace, upstream)
    creator = TableCreator(config, registry, workspace, upstream)
    rewriter = TableRewriter(config, registry, workspace, upstream)
    rejects = RejectsTables(creator, tables, upstream, bad_records)
    scans = Scans(scan_sessions or ScanSessions(registry), tables, upstream, rejects, workspace)
    return HandlerRegistry(
        [
            CreateTempTableHandler(creator),
            DropTempTableHandler(tables),
            ListTempTablesHandler(tables),
            ReadTempTableHandler(tables),
            ScanHandler(scans),
            DropViewHandler(config, tables),
            InsertIntoHandler(tables, rewriter, upstream, config.recovery_timeout_s),
            DeleteHandler(tables, rewriter),
            UpdateHandler(tables, rewriter),
            MergeHandler(tables, rewriter),
            TruncateHandler(tables, rewriter),
            CreateScanViewHandler(scans, tables, upstream),
            CreateTempViewHandler(tables),
            CreatePersistentViewHandler(tables),
            AlterViewHandler(tables),
        ],
        SQL_ORDER,
    )


def _owns(engines: Engines, user: str, owner: str) -> bool:
    try:
        return engines.owner_of(user) == owner
    except NoEngine:
        return False


def serve(
    config: Config,
    prepared: Prepared | None = None,
    engine_conf: Mapping[str, str] | None = None,
    engine_jvm_options: tuple[str, ...] = (),
) -> Gateway:
    """Start a gateway for ``config`` and return it running; never blocks. ``prepared``: what
    ``start_checks.prepare`` checked and claimed for it, which it then owns (default: it runs
    the checks itself); ``engine_conf``, ``engine_jvm_options``: for the engines it starts
    with a share level other than ``server``."""
    if config.upstream is None and config.share_level == "server":
        if prepared is not None:
            prepared.release()
        raise ConfigError("the gateway needs an upstream Spark Connect server (sc://host:port)")
    return Gateway(config, prepared, engine_conf, engine_jvm_options).start()


def _engine_ids(engines: Engines) -> Callable[[str], tuple[int, int] | None]:
    """The (uid, gid) a user's engine runs as, when it runs as a user of its own."""

    def ids(user: str) -> tuple[int, int] | None:
        found = engines.os_user_of(user)
        return None if found is None else found.ids

    return ids
