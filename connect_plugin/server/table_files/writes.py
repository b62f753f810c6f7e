"""Spark's write of a temp table's files, and stopping such a write.

The query result is written by one ``WriteOperation`` in the user's own
session, with its rows counted by an observation on the same job. A write
runs on in Spark when its client goes away, and its tasks would bring a
deleted folder back, so whoever gives a table up (a failed CTTAS, a release,
start-up recovery) interrupts the write and waits until Spark let go of it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import (
    ConnectPluginError,
    TempTableError,
    TempTableQueryFailed,
    UpstreamFailed,
)
from connect_plugin.server.model.spark_sql import literal
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.transport.liveness import Liveness, liveness_of
from connect_plugin.server.transport.plans import deep_messages
from connect_plugin.server.transport.upstream import UpstreamSession

log = logging.getLogger(__name__)

WRITE_POLL_S = 0.1
QUIET_POLLS = 3
"""Polls a failed write's folder must stay gone for before it counts as removed."""
LATE_WATCH_S = 30.0
"""How long a removed write's folder is removed again should a late task bring it back."""
LATE_POLL_S = 0.1
_late_watchers: set[asyncio.Task[None]] = set()
_ROWS_METRIC = "rows"

ProgressSink = Callable[[spark_proto.ExecutePlanResponse], None]
"""Takes Spark's progress responses of a write, to relay them to the client."""


@dataclass(frozen=True)
class Written:
    """What a write did: its rows, and the values of the observations asked for by name
    (missing when Spark sent none)."""

    rows: int
    observed: dict[str, list[int]] = field(default_factory=dict)


async def write_files(
    upstream: UpstreamSession,
    relation: spark_proto.Relation,
    table: TempTable,
    *,
    partition_columns: Sequence[str],
    options: Mapping[str, str],
    progress: ProgressSink,
    operation_id: str,
    outcome: str = "was not created",
    metrics: Sequence[str] = (),
    rows_at: tuple[str, int] | None = None,
) -> Written:
    """Write ``relation`` into the table's folder as ``operation_id``.

    ``metrics``: names of observations (``CollectMetrics``) in ``relation``
    whose integer values the write reports. ``rows_at``: the observation among
    them and the index of its value that counts the rows written; without it,
    the write counts its rows with an observation of its own.
    """
    metric = f"connect_plugin_{uuid.uuid4().hex}"
    with deep_messages():
        observed = relation
        if rows_at is None:
            observed = spark_proto.Relation()
            observed.collect_metrics.input.CopyFrom(relation)
            observed.collect_metrics.name = metric
            _count_rows(observed.collect_metrics.metrics.add())
        command = spark_proto.Command()
        write = command.write_operation
        write.input.CopyFrom(observed)
        write.source = table.format
        write.path = str(table.location)
        write.mode = spark_proto.WriteOperation.SaveMode.SAVE_MODE_ERROR_IF_EXISTS
        write.partitioning_columns.extend(partition_columns)
        write.options.update(options)
        plan = spark_proto.Plan(command=command)
    rows: int | None = None
    counts: dict[str, list[int]] = {}
    try:
        async for response in upstream.execute(plan, operation_id=operation_id):
            if response.HasField("execution_progress"):
                progress(response)
            for found in response.observed_metrics:
                if found.name == metric and found.values:
                    rows = found.values[0].long
                elif found.name in metrics:
                    counts[found.name] = [value.long for value in found.values]
    except UpstreamFailed as exc:
        raise TempTableQueryFailed(
            f"Temporary table [{table.name}] {outcome}: writing "
            f"[{table.location}] failed: {exc.message}{await root_cause(upstream, exc)}"
        ) from exc
    if rows_at is not None and rows_at[0] in counts:
        rows = counts[rows_at[0]][rows_at[1]]
    if rows is None:
        rows = await _count_written(upstream, table)
    return Written(rows, counts)


def _count_rows(expression: spark_proto.Expression) -> None:
    """Make ``expression`` the ``count(1) AS rows`` that both ways of counting a write use."""
    expression.alias.name.append(_ROWS_METRIC)
    expression.alias.expr.unresolved_function.function_name = "count"
    expression.alias.expr.unresolved_function.arguments.append(literal(1))


async def _count_written(upstream: UpstreamSession, table: TempTable) -> int:
    """The rows in a table's files, when Spark sent no observed metrics with their write.

    Spark 4.0 and 4.1 servers sometimes leave the metrics out (the first write
    after start-up most often); the files just written hold the answer.
    """
    log.info("Spark sent no row count with the write of [%s]; counting its files", table.name)
    relation = spark_proto.Relation()
    source = relation.aggregate.input.read.data_source
    source.format = table.format
    source.schema = table.schema_json
    source.paths.append(str(table.location))
    source.options.update(table.options)
    relation.aggregate.group_type = spark_proto.Aggregate.GroupType.GROUP_TYPE_GROUPBY
    _count_rows(relation.aggregate.aggregate_expressions.add())
    try:
        (row,) = await upstream.rows(relation)
    except UpstreamFailed as exc:
        raise TempTableQueryFailed(
            f"Temporary table [{table.name}]: Spark did not report the number of rows "
            f"written, and counting them in [{table.location}] failed: {exc.message}"
        ) from exc
    rows = row[_ROWS_METRIC]
    assert isinstance(rows, int)
    return rows


async def stop_write(
    upstream: UpstreamSession, operation_id: str, name: str, timeout_s: float
) -> None:
    """Interrupt a table's write operation and wait until Spark has let go of it.

    GetStatus comes first: unlike Interrupt it never creates the session it
    names, and a session Spark no longer has runs nothing.
    """

    async def interrupt_and_wait() -> None:
        try:
            await upstream.running(operation_id)
        except ConnectPluginError as exc:
            if liveness_of(exc) is Liveness.GONE:
                return
            raise
        if await upstream.interrupt(operation_id):
            log.info("Temporary table [%s]: interrupted its write.", name)
        while await upstream.running(operation_id):
            await asyncio.sleep(WRITE_POLL_S)

    try:
        await asyncio.wait_for(interrupt_and_wait(), timeout_s)
    except (TimeoutError, asyncio.TimeoutError):
        raise TempTableError(
            f"Temporary table [{name}]: its write (operation {operation_id}) still runs "
            f"{timeout_s:.0f} s after being interrupted"
        ) from None


async def remove_for_good(remove: Callable[[], bool], timeout_s: float) -> None:
    """Remove a failed write's folder, again while Spark's tasks straggle into it.

    When a write is stopped, Spark ends the operation without waiting for its
    tasks: one still opening its file (slowed down, say, by a code generation
    the interrupt broke) can create the file and the folders above it after
    the operation ended and the folder was deleted. ``remove`` (True when it
    deleted something) runs until the folder stays gone for a few polls, and
    then, in the background, whenever it comes back within ``LATE_WATCH_S``.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    remove()
    quiet = 0
    while quiet < QUIET_POLLS and loop.time() < deadline:
        await asyncio.sleep(WRITE_POLL_S)
        if remove():
            log.info("removed files a stopped write left after it ended")
            quiet = 0
        else:
            quiet += 1
    watcher = asyncio.ensure_future(_keep_removed(remove, loop.time() + LATE_WATCH_S))
    _late_watchers.add(watcher)
    watcher.add_done_callback(_late_watchers.discard)


async def _keep_removed(remove: Callable[[], bool], until: float) -> None:
    loop = asyncio.get_running_loop()
    while loop.time() < until:
        await asyncio.sleep(LATE_POLL_S)
        try:
            if remove():
                log.info("removed files a stopped write's late task brought back")
        except ConnectPluginError:
            log.exception("removing files a stopped write's late task brought back failed")
            return


async def stop_late_watches() -> None:
    """Stop the background removals (``remove_for_good``) this event loop still runs, as its
    gateway stops: a folder a straggling task brings back after that is an orphan, which
    the next start deletes."""
    loop = asyncio.get_running_loop()
    watches = [w for w in _late_watchers if w.get_loop() is loop]
    for watch in watches:
        watch.cancel()
    await asyncio.gather(*watches, return_exceptions=True)


async def root_cause(upstream: UpstreamSession, exc: UpstreamFailed) -> str:
    """`` (caused by: ...)`` with the innermost Spark error, when Spark kept its details.

    A failed write says only "Task failed while writing rows"; what the user
    can act on (no space left, permission denied) is its root cause. A scan's
    error has none to add (``exc``'s message leads with it, its status names no
    error id), its cause being the worker's traceback, which stays in Spark's log.
    """
    if not exc.error_id:
        return ""
    try:
        response = await upstream.error_details(exc.error_id)
    except ConnectPluginError:
        return ""
    errors = response.errors
    if not errors or not response.HasField("root_error_idx"):
        return ""
    index, seen = response.root_error_idx, set()
    while errors[index].HasField("cause_idx") and index not in seen:
        seen.add(index)
        index = errors[index].cause_idx
    cause = errors[index].message
    return f" (caused by: {cause})" if cause and cause not in exc.message else ""
