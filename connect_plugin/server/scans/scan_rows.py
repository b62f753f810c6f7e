"""Rows the scans of a query read, from the metrics Spark sends with its results.

The scan reads its files in Spark's Python workers, out of the gateway's
sight, but Spark reports the metrics of every node of a query's plan in one
message near the end of its ExecutePlan stream (``ExecutePlanResponse.metrics``),
where the scan is the node ``BatchScan connect_plugin_scan`` with its
``numOutputRows``. Those rows are counted by the bad-record policy of the
request's scans (``mixed`` when they differ).

Only the responses of requests that held a scan are looked at, and of each
only its top-level fields are walked, skipping each whole (no Arrow batch
is decoded or copied); the metrics, when there, are all that is decoded.
A long result comes in several streams (the client reattaches with
ReattachExecute, the metrics on the last), so an operation is remembered
from its first response until its metrics or its ``result_complete`` came;
operations that never end that way (a failed query the client gave up on)
are forgotten once ``MAX_PENDING_OPERATIONS`` newer ones wait.

Bad records are counted where the gateway can see them: under ``fail`` a
query stops at its first, which reaches the gateway as the query's error
(``CONNECT_PLUGIN.SCAN_BAD_RECORD``): one per such query (``failed``);
under ``reject`` the rejects table's files say how many (``rejects``).
Under ``skip`` and ``null`` they stay in Spark's Python workers: Spark's
Python data sources report no metrics of their own.

Scans Spark runs for a view over a scan (``CREATE TEMPORARY VIEW ... USING
scan``, ``createOrReplaceTempView``) are not in the request, and the
gateway's own queries (the write of a CTTAS) stream to the gateway, not
through it: their rows are not counted.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable

import grpc
from google.protobuf.message import DecodeError
from pyspark.sql.connect import proto as spark_proto

from connect_plugin import errors, proto
from connect_plugin.scanning.spark import SHORT_NAME
from connect_plugin.server.model.statements import ScanFiles, Statement
from connect_plugin.server.transport.plans import top_level_fields

SCAN_NODE = f"BatchScan {SHORT_NAME}"
"""The name Spark gives the scan's node in a query's metrics."""
OUTPUT_ROWS = "numOutputRows"
FAIL = "fail"
MIXED = "mixed"
"""The policy of a request whose scans have different bad-record policies."""
MAX_PENDING_OPERATIONS = 10_000
"""Operations remembered for a reattach at most; a few hundred bytes each."""

_METRICS = spark_proto.ExecutePlanResponse.DESCRIPTOR.fields_by_name["metrics"].number
_RESULT_COMPLETE = spark_proto.ExecutePlanResponse.DESCRIPTOR.fields_by_name[
    "result_complete"
].number
_WATCHED = frozenset((_METRICS, _RESULT_COMPLETE))

ScanRowCount = Callable[[str, int], None]
"""Hears the rows a query's scans read: (bad-record policy, rows)."""
ResponseWatch = Callable[[bytes], None]
"""Sees each response of a call, as bytes, before the client gets it."""


def scan_policy(requests: Iterable[Statement]) -> str | None:
    """The bad-record policy of the scans among ``requests``; None when there is no scan."""
    policies = {
        proto.word_of(proto.BadRecordPolicy, r.message.on_error)
        for r in requests
        if isinstance(r, ScanFiles)
    }
    if not policies:
        return None
    return policies.pop() if len(policies) == 1 else MIXED


def scan_rows(metrics: bytes) -> int | None:
    """Rows of the scan nodes in an encoded ``ExecutePlanResponse.Metrics``; None when
    malformed."""
    try:
        decoded = spark_proto.ExecutePlanResponse.Metrics.FromString(metrics)
    except DecodeError:
        return None
    return sum(
        node.execution_metrics[OUTPUT_ROWS].value
        for node in decoded.metrics
        if node.name == SCAN_NODE and OUTPUT_ROWS in node.execution_metrics
    )


class ScanRows:
    """Counts the rows of scans from the metrics of the operations that hold them."""

    def __init__(self, count: ScanRowCount, bad_records: ScanRowCount) -> None:
        self._count = count
        self._bad_records = bad_records
        self._pending: OrderedDict[tuple[str, str, str], str] = OrderedDict()

    def executed(self, request: spark_proto.ExecutePlanRequest, policy: str) -> ResponseWatch:
        """The watch of the responses of an ExecutePlan whose scans have ``policy``."""
        key = (request.user_context.user_id, request.session_id, request.operation_id)
        remembered = not request.operation_id

        def watch(response: bytes) -> None:
            nonlocal remembered
            if not remembered:
                remembered = True
                self._remember(key, policy)
            self._watch(key, policy, response)

        return watch

    def failed(self, policy: str) -> Callable[[grpc.aio.AioRpcError], None] | None:
        """What counts a query of scans with ``policy`` that a bad record stopped (under
        ``fail``, at its first: one each); None when none of its scans fails on one."""
        if policy not in (FAIL, MIXED):
            return None

        def failed(error: grpc.aio.AioRpcError) -> None:
            found = errors.find_marked(error.details() or "")
            if found is not None and found.error_class == errors.BadRecord.error_class:
                self._bad_records(FAIL, 1)

        return failed

    def reattached(self, request: spark_proto.ReattachExecuteRequest) -> ResponseWatch | None:
        """The watch of a reattached operation's responses, if it holds scans not counted yet."""
        key = (request.user_context.user_id, request.session_id, request.operation_id)
        policy = self._pending.get(key)
        if policy is None:
            return None
        return lambda response: self._watch(key, policy, response)

    def _remember(self, key: tuple[str, str, str], policy: str) -> None:
        self._pending[key] = policy
        while len(self._pending) > MAX_PENDING_OPERATIONS:
            self._pending.popitem(last=False)

    def _watch(self, key: tuple[str, str, str], policy: str, response: bytes) -> None:
        fields = top_level_fields(response, _WATCHED)
        if not fields:
            return
        counted = _METRICS in fields and (key in self._pending or not key[2])
        self._pending.pop(key, None)
        if counted:
            rows = scan_rows(fields[_METRICS])
            if rows is not None:
                self._count(policy, rows)
