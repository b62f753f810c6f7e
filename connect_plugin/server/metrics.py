"""Prometheus metrics of the gateway (``metrics_port``), served by ``prometheus_client``.

What the gateway does, never who asked: no label holds a user, a session, a
token, a table name or a path. Labels are the RPC method, its gRPC status
code, the direction of bytes, and the kind of a refusal (the exception
class, a bounded set).

- ``connect_plugin_rpcs_total{method,code}`` and
  ``connect_plugin_rpc_duration_seconds{method}``: every call of the Spark
  Connect service, forwarded or answered by the gateway;
- ``connect_plugin_active_streams``: calls with a response stream in flight;
- ``connect_plugin_forwarded_bytes_total{direction}``: request bytes to the
  upstream (``to_upstream``) and response bytes to clients (``to_client``);
- ``connect_plugin_refusals_total{reason}``: calls the gateway refused
  itself (``Unauthenticated``, ``QuotaExceeded``, ``SettingProtected``, ...);
- ``connect_plugin_sessions``, ``connect_plugin_temp_tables`` and
  ``connect_plugin_temp_table_rows``: what the session registry holds, read
  at each scrape.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily

from connect_plugin.errors import ConfigError
from connect_plugin.server.sessions import SessionRegistry

log = logging.getLogger(__name__)

DURATION_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0, 600.0)
"""Seconds: a Config call takes a millisecond, a CTTAS minutes."""


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
        self._to_upstream = self.forwarded.labels("to_upstream")
        self._to_client = self.forwarded.labels("to_client")

    def finished(self, method: str, code: str, seconds: float) -> None:
        self.rpcs.labels(method, code).inc()
        self.durations.labels(method).observe(seconds)

    def sent_upstream(self, request: object) -> None:
        if isinstance(request, bytes):
            self._to_upstream.inc(len(request))

    def sent_to_client(self, response: bytes) -> None:
        self._to_client.inc(len(response))

    def refused(self, reason: BaseException) -> None:
        self.refusals.labels(type(reason).__name__).inc()

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
    """Sessions, temp tables and their rows, read from the session registry when scraped."""

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
