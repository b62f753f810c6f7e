"""Prometheus metrics of the gateway (``metrics_port``), served by ``prometheus_client``.

What the gateway does, never who asked: no label holds a user, a session, a
token, a table name or a path. Labels are the RPC method, its gRPC status
code, the direction of bytes, the kind of a refusal (the exception class, a
bounded set) and the other bounded sets named below.

- ``connect_plugin_rpcs_total{method,code}`` and
  ``connect_plugin_rpc_duration_seconds{method}``: every call of the Spark
  Connect service, forwarded or answered by the gateway;
- ``connect_plugin_active_streams``: calls with a response stream in flight;
- ``connect_plugin_forwarded_bytes_total{direction}``: request bytes to the
  upstream (``to_upstream``) and response bytes to clients (``to_client``);
- ``connect_plugin_upstream_calls_total{method}``: the clients' calls the
  gateway sent on to Spark, by method (those it answered itself are not);
- ``connect_plugin_refusals_total{reason}``: calls the gateway refused
  itself (``Unauthenticated``, ``QuotaExceeded``, ``SettingProtected``, ...);
- ``connect_plugin_quota_refusals_total{quota}``: of those, the ones over a
  quota, by quota (``sessions_per_user``, ``tables_per_session``,
  ``bytes_per_session``);
- ``connect_plugin_statements_total{kind,outcome}``: statements and plugin
  requests handled (``CreateTempTable``, ``UpdateTable``, ``ScanFiles``, ...;
  ``ok``, ``refused``, ``failed``);
- ``connect_plugin_upstream_errors_total{error_class}``: calls Spark failed;
- ``connect_plugin_scan_rows_total{policy}``: rows the scans of queries
  read, from the metrics Spark sends with a query's results, by the scans'
  bad-record policy (``fail``, ``skip``, ``null``, ``reject``, ``mixed``;
  see ``scan_rows``);
- ``connect_plugin_scan_bad_records_total{policy}``: bad records the scans
  of queries met, where the gateway sees them: under ``fail`` the one that
  stopped a query, under ``reject`` the records written to the rejects
  table (under ``skip`` and ``null`` Spark reports none);
- ``connect_plugin_sessions``, ``connect_plugin_temp_tables``,
  ``connect_plugin_temp_table_rows`` and ``connect_plugin_temp_table_bytes``:
  what the session registry holds, read at each scrape; rows and bytes as
  last counted and measured (bytes when a table's files were written, by
  the gateway or by Spark's INSERT, never by walking the workspace at a
  scrape; a table recorded by a gateway that measured none counts 0);
- ``connect_plugin_sessions_ended_total{reason}`` and
  ``connect_plugin_recovery_actions_total{action}``: what the expiry and the
  start-up recovery did;
- with share level ``user`` or ``group``: ``connect_plugin_engines{state}``
  (``running``, ``starting``), ``connect_plugin_engine_starts_total``,
  ``connect_plugin_engine_stops_total{reason}`` (``idle``, ``exited``,
  ``gateway_stop``) and ``connect_plugin_engine_start_duration_seconds``:
  engines by count, never by owner.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from connect_plugin.errors import ConfigError, QuotaExceeded
from connect_plugin.server.sessions.registry import SessionRegistry
from connect_plugin.server.transport.upstream import upstream_failure

if TYPE_CHECKING:
    from connect_plugin.server.sessions.expiry import WatchFigures
    from connect_plugin.server.sessions.recovery import Recovery

log = logging.getLogger(__name__)

DURATION_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0, 600.0)
"""Seconds: a Config call takes a millisecond, a CTTAS minutes."""
ENGINE_START_BUCKETS = (2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0, 300.0)
"""Seconds: an engine starts in a few seconds on an idle machine, minutes on a loaded one."""


class GatewayMetrics:
    """The gateway's metrics, in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.rpcs = Counter(
            "connect_plugin_rpcs",
            "Calls of the Spark Connect service, by method and gRPC status code",
            ["method", "code"],
            registry=self.registry,
        )
        self.durations = Histogram(
            "connect_plugin_rpc_duration_seconds",
            "How long calls took, from their start to their last response, by method",
            ["method"],
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.active_streams = Gauge(
            "connect_plugin_active_streams",
            "Calls with a response stream in flight",
            registry=self.registry,
        )
        self.forwarded = Counter(
            "connect_plugin_forwarded_bytes",
            "Bytes of requests sent upstream and of responses sent to clients",
            ["direction"],
            registry=self.registry,
        )
        self.refusals = Counter(
            "connect_plugin_refusals",
            "Calls the gateway refused itself, by kind of refusal",
            ["reason"],
            registry=self.registry,
        )
        self.quota_refusals = Counter(
            "connect_plugin_quota_refusals",
            "Calls refused because they would go over a quota, by quota",
            ["quota"],
            registry=self.registry,
        )
        self.statements = Counter(
            "connect_plugin_statements",
            "Statements and plugin requests the gateway handled, by kind and outcome",
            ["kind", "outcome"],
            registry=self.registry,
        )
        self.scan_rows = Counter(
            "connect_plugin_scan_rows",
            "Rows the scans of queries read, as Spark reports them, by bad-record policy",
            ["policy"],
            registry=self.registry,
        )
        self.bad_records = Counter(
            "connect_plugin_scan_bad_records",
            "Bad records the scans of queries met, by bad-record policy (fail, reject)",
            ["policy"],
            registry=self.registry,
        )
        self.upstream_errors = Counter(
            "connect_plugin_upstream_errors",
            "Calls the Spark Connect server failed, by Spark's error class (or gRPC code)",
            ["error_class"],
            registry=self.registry,
        )
        self.upstream_calls = Counter(
            "connect_plugin_upstream_calls",
            "Clients' calls sent on to the Spark Connect server, by method",
            ["method"],
            registry=self.registry,
        )
        self._finished: dict[tuple[str, str], tuple[Any, Any]] = {}
        """Each (method, code)'s counter and histogram child: ``labels`` takes a lock and
        builds its key on every call, on the path of every RPC."""
        self._sent: dict[str, Any] = {}
        self.engine_starts = Counter(
            "connect_plugin_engine_starts",
            "Engines (share level user or group) started",
            registry=self.registry,
        )
        self.engine_stops = Counter(
            "connect_plugin_engine_stops",
            "Engines stopped, by why (idle, exited, gateway_stop)",
            ["reason"],
            registry=self.registry,
        )
        self.engine_start_seconds = Histogram(
            "connect_plugin_engine_start_duration_seconds",
            "How long engines took to start, until they served",
            buckets=ENGINE_START_BUCKETS,
            registry=self.registry,
        )
        self._to_upstream = self.forwarded.labels("to_upstream")
        self._to_client = self.forwarded.labels("to_client")

    def finished(self, method: str, code: str, seconds: float) -> None:
        children = self._finished.get((method, code))
        if children is None:
            children = (self.rpcs.labels(method, code), self.durations.labels(method))
            self._finished[(method, code)] = children
        children[0].inc()
        children[1].observe(seconds)

    def sent_upstream(self, method: str, request: object) -> None:
        sent = self._sent.get(method)
        if sent is None:
            sent = self._sent[method] = self.upstream_calls.labels(method)
        sent.inc()
        if isinstance(request, bytes):
            self._to_upstream.inc(len(request))

    def sent_to_client(self, response: bytes) -> None:
        self._to_client.inc(len(response))

    def refused(self, reason: BaseException) -> None:
        self.refusals.labels(type(reason).__name__).inc()
        if isinstance(reason, QuotaExceeded):
            self.quota_refusals.labels(reason.quota).inc()

    def statement(self, kind: str, outcome: str) -> None:
        self.statements.labels(kind, outcome).inc()

    def scanned(self, policy: str, rows: int) -> None:
        self.scan_rows.labels(policy).inc(rows)

    def bad_record(self, policy: str, records: int) -> None:
        self.bad_records.labels(policy).inc(records)

    def upstream_failed(self, error: grpc.aio.AioRpcError) -> None:
        self.upstream_errors.labels(upstream_failure(error).error_class or error.code().name).inc()

    def engine_started(self, seconds: float) -> None:
        self.engine_starts.inc()
        self.engine_start_seconds.observe(seconds)

    def engine_stopped(self, reason: str) -> None:
        self.engine_stops.labels(reason).inc()

    def watch_engines(self, counts: Callable[[], tuple[int, int]]) -> None:
        """Report the engines running and starting (``counts``) at each scrape."""
        self.registry.register(_Engines(counts))

    def watch_actions(self, figures: WatchFigures, recovery: Recovery | None) -> None:
        """Report the expiry's and start-up recovery's actions at each scrape."""
        self.registry.register(_Actions(figures, recovery))

    def watch(self, registry: SessionRegistry) -> None:
        """Report what ``registry`` holds at each scrape."""
        self.registry.register(_Holdings(registry.sessions))

    def serve(self, host: str, port: int) -> Callable[[], None]:
        """Serve the metrics over HTTP on ``host:port``; the function that stops serving."""
        try:
            server, thread = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            raise ConfigError(
                f"cannot serve metrics on {host}:{port}: {exc.strerror}; choose another "
                "--metrics-port (0: any free port)"
            ) from exc
        log.info("metrics at http://%s:%d/metrics", host, server.server_port)
        self.port = server.server_port

        def stop() -> None:
            server.shutdown()
            server.server_close()
            thread.join()

        return stop


class _Holdings:
    """Sessions, temp tables, their rows and bytes, read from the session registry when
    scraped."""

    def __init__(self, sessions: Callable[[], Iterable[Any]]) -> None:
        self._sessions = sessions

    def collect(self) -> Iterable[GaugeMetricFamily]:
        held = list(self._sessions())
        tables = [table for session in held for table in list(session.tables.values())]
        yield GaugeMetricFamily(
            "connect_plugin_sessions", "Sessions the gateway holds state for", len(held)
        )
        yield GaugeMetricFamily(
            "connect_plugin_temp_tables", "Temporary tables of every session", len(tables)
        )
        yield GaugeMetricFamily(
            "connect_plugin_temp_table_rows",
            "Rows of every session's temporary tables (as last counted)",
            sum(table.rows or 0 for table in tables),
        )
        yield GaugeMetricFamily(
            "connect_plugin_temp_table_bytes",
            "Bytes of the data files of every session's temporary tables (as last measured)",
            sum(table.size or 0 for table in tables),
        )


class _Engines:
    """Engines running and starting, read when scraped."""

    def __init__(self, counts: Callable[[], tuple[int, int]]) -> None:
        self._counts = counts

    def collect(self) -> Iterable[GaugeMetricFamily]:
        running, starting = self._counts()
        engines = GaugeMetricFamily(
            "connect_plugin_engines", "Engines of share level user or group, by state",
            labels=["state"],
        )
        engines.add_metric(["running"], running)
        engines.add_metric(["starting"], starting)
        yield engines


class _Actions:
    """What the expiry and the start-up recovery did, read when scraped."""

    def __init__(self, figures: WatchFigures, recovery: Recovery | None) -> None:
        self._figures = figures
        self._recovery = recovery

    def collect(self) -> Iterable[CounterMetricFamily]:
        sessions = CounterMetricFamily(
            "connect_plugin_sessions_ended",
            "Sessions whose temporary tables the gateway dropped on its own, by why",
            labels=["reason"],
        )
        sessions.add_metric(["expired"], len(self._figures.expired))
        sessions.add_metric(["gone_upstream"], len(self._figures.gone))
        yield sessions
        recovery = self._recovery
        if recovery is None:
            return
        actions = CounterMetricFamily(
            "connect_plugin_recovery_actions",
            "What the last start-up repaired, by action",
            labels=["action"],
        )
        actions.add_metric(["table_rolled_back"], len(recovery.rolled_back))
        actions.add_metric(["drop_finished"], len(recovery.drops_finished))
        actions.add_metric(["session_gone"], len(recovery.sessions_gone))
        actions.add_metric(["folder_swept"], len(recovery.swept))
        yield actions
