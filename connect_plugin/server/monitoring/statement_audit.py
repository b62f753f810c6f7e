"""The audit lines and statement counts of one ExecutePlan's handled requests."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import grpc
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import (
    ConnectPluginError,
    TempTableQueryFailed,
    UpstreamFailed,
    UpstreamUnavailable,
)
from connect_plugin.server.model.statements import Statement
from connect_plugin.server.monitoring.audit import AuditLog, operation_of, who
from connect_plugin.server.transport.status import error_class_of
from connect_plugin.server.transport.upstream import upstream_failure

StatementCount = Callable[[str, str], None]
"""Hears each handled request's kind and outcome (``ok``, ``refused``, ``failed``)."""


class Audited:
    """The audit lines of one ExecutePlan's statements: each handled request, how it ended."""

    def __init__(
        self,
        log: AuditLog | None,
        count: StatementCount | None,
        request: spark_proto.ExecutePlanRequest,
        handled: list[Statement],
    ) -> None:
        self._log = log
        self._count = count
        self._user, self._session = who(request)
        self._operation = operation_of(request)
        self._handled = handled

    def _record(self, outcome: str, error_class: str | None = None) -> None:
        for handled in self._handled:
            if self._count is not None:
                self._count(type(handled).__name__, outcome)
            if self._log is None:
                continue
            name = getattr(handled, "name", None)
            self._log.record(
                method="ExecutePlan",
                kind=type(handled).__name__,
                outcome=outcome,
                user=self._user,
                session=self._session,
                table=None if name is None else str(name),
                error_class=error_class,
                operation=self._operation,
            )

    def refused(self, exc: ConnectPluginError) -> None:
        """The gateway refused the request, or the work it did upstream for it failed (this
        line is its refusal, not another)."""
        failed = isinstance(exc, (UpstreamFailed, TempTableQueryFailed, UpstreamUnavailable))
        outcome = "failed" if failed else "refused"
        self._record(outcome, error_class_of(exc))
        exc.audited = True  # type: ignore[attr-defined]

    def failed(self, error: grpc.aio.AioRpcError) -> None:
        self._record("failed", upstream_failure(error).error_class or error.code().name)

    def finished(
        self, after: Callable[[], Awaitable[None]] | None
    ) -> Callable[[], Awaitable[None]] | None:
        """``after`` (the follow-ups), then the ``ok`` lines; a follow-up's failure is its
        line instead."""
        if self._log is None and self._count is None:
            return after

        async def run() -> None:
            try:
                if after is not None:
                    await after()
            except ConnectPluginError as exc:
                self._record("failed", error_class_of(exc))
                raise
            self._record("ok")

        return run
