"""Rewriting a temp table whole: a plan of its new rows, then the plan written and swapped in.

A row change (DELETE, UPDATE, MERGE, TRUNCATE), an overwrite and the
laying out of an old table's partition folders each make a new version of
the whole table, in two steps that read top to bottom in their handler:

1. under the session's lock (``TableRewriter.rewriting``), the statement
   plans the new rows from the table as it is: a ``Rewrite``, a plain value
   (its rows, in the table's columns; what its write counts; for a
   statement, how its errors name it);
2. ``Rewriting.run`` executes the plan: the rows, checked as the table's
   format needs, are written into a new folder of the session, counted, and
   checked (the table's view is still its own, and the plan's own check);
   then the view moves to the new files (``versions``).

The table keeps its name, format, columns, partitioning, options and
creation time; a failure leaves it as it was, and no folder behind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial

from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.types import StructType

from connect_plugin.config import Config
from connect_plugin.errors import (
    ConnectPluginError,
    TempTableNotFound,
    TempTableQueryFailed,
    UpstreamFailed,
    WorkspaceError,
)
from connect_plugin.server.model.statements import Name
from connect_plugin.server.sessions.registry import Session, SessionRegistry
from connect_plugin.server.sessions.workspace import Workspace
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.table_files.writes import ProgressSink, Written
from connect_plugin.server.tables.catalog import Tables
from connect_plugin.server.tables.value_checks import checked, rules
from connect_plugin.server.tables.versions import TableVersions
from connect_plugin.server.tables.zero_signs import refuse_zeros_of_both_signs, zero_columns
from connect_plugin.server.transport.upstream import SessionContext, Upstream, UpstreamSession

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rewrite:
    """A planned new version of a temp table, built from the table before anything is
    written: its rows, in its columns, and how their write counts them.

    A statement's rewrite (``statement``: the statement as its errors name it)
    also checks, beside the write, that the table's view is still its own, and
    explains a failed write in the statement's terms (``in_user_terms``).
    """

    relation: spark_proto.Relation
    metric: str = ""
    """The name of the observation in ``relation`` that counts the changes (if any)."""
    counting: spark_proto.Relation | None = None
    """The same counts as one row, for when Spark sends no observed metrics with a write."""
    rows_at: int | None = None
    """Which of the observation's values counts the rows written (the write then adds no
    observation of its own)."""
    statement: str = ""

    async def check(self, upstream: UpstreamSession, written: Written) -> None:
        """Raise when the written rows must not become the table (the write is undone)."""

    def in_user_terms(self, message: str) -> str:
        """Spark's error about the rewrite's query, in the terms of the statement."""
        return message

    def failed(self, exc: UpstreamFailed) -> TempTableQueryFailed:
        """The statement's own error for Spark's failure to run its query."""
        return TempTableQueryFailed(f"{self.statement}: {self.in_user_terms(exc.message)}")


class TableRewriter:
    """Rewrites temp tables in their sessions: a table locked, planned, then rewritten."""

    def __init__(
        self, config: Config, registry: SessionRegistry, workspace: Workspace, upstream: Upstream
    ) -> None:
        self._registry = registry
        self._workspace = workspace
        self._upstream = upstream
        self._versions = TableVersions(config, registry, workspace)

    @asynccontextmanager
    async def rewriting(
        self, context: SessionContext, name: Name, progress: ProgressSink
    ) -> AsyncIterator[Rewriting]:
        """The session's temp table ``name``, locked for one rewrite until the block ends."""
        upstream = self._upstream.session(context)
        async with self._registry.statement(context.user_id, context.session_id) as session:
            table = session.tables.get(name.name.lower())
            if table is None:
                raise TempTableNotFound(f"Temporary table [{name}] not found in this session")
            yield Rewriting(self._versions, self._workspace, session, upstream, table, progress)


class Rewriting:
    """A temp table locked for one rewrite: plan it from ``table``, then ``run`` the plan."""

    def __init__(
        self,
        versions: TableVersions,
        workspace: Workspace,
        session: Session,
        upstream: UpstreamSession,
        table: TempTable,
        progress: ProgressSink,
    ) -> None:
        self._versions = versions
        self._workspace = workspace
        self._session = session
        self.upstream = upstream
        self.table = table
        self._progress = progress

    async def run(self, rewrite: Rewrite) -> tuple[TempTable, Written]:
        """Write the plan's rows as the table's new version and swap it in: the table as it
        now is, and what the write did."""
        view_checked = (
            asyncio.ensure_future(Tables.view_is_table(self.upstream, self.table))
            if rewrite.statement
            else None
        )
        try:
            written = await self._write_and_swap(rewrite, view_checked)
        except TempTableQueryFailed as exc:
            if rewrite.statement:
                await self._explain(rewrite, exc)
            raise
        finally:
            if view_checked is not None:
                view_checked.cancel()
                await asyncio.gather(view_checked, return_exceptions=True)
        return self._session.tables[self.table.key], written

    async def _write_and_swap(
        self, rewrite: Rewrite, view_checked: asyncio.Future[bool] | None
    ) -> Written:
        table = self.table
        schema = StructType.fromJson(json.loads(table.schema_json))
        relation = checked(
            rewrite.relation, table.name, rules(table.format, schema, table.partition_columns)
        )
        await refuse_zeros_of_both_signs(
            self.upstream,
            rewrite.relation,
            table.name,
            zero_columns(table.format, schema, table.partition_columns),
        )
        log.info("Temporary table [%s] is being rewritten.", table.name)
        try:
            location = self._workspace.new_table_folder(
                self._session.session_id, self._session.user_id
            )
        except WorkspaceError as exc:
            raise WorkspaceError(f"Temporary table [{table.name}] was not changed: {exc}") from exc
        return await self._versions.write_and_swap(
            self._session,
            self.upstream,
            dataclasses.replace(table, location=location, rows=0, size=None),
            relation,
            table,
            taken=True,
            progress=self._progress,
            outcome="was not changed",
            metrics=(rewrite.metric,) if rewrite.metric else (),
            rows_at=None if rewrite.rows_at is None else (rewrite.metric, rewrite.rows_at),
            before_swap=partial(self._checked, rewrite, view_checked),
        )

    async def _checked(
        self, rewrite: Rewrite, view_checked: asyncio.Future[bool] | None, written: Written
    ) -> Written:
        """What the write did, counted, once the rows may become the table: the table's view
        is still its own, and the plan's own check holds."""
        written = await self._counted(rewrite, written)
        if view_checked is not None and not await view_checked:
            raise TempTableNotFound(
                f"{rewrite.statement}: the view of temporary table [{self.table.name}] was "
                "dropped or replaced outside the gateway; SHOW TEMPORARY TABLES lists "
                "the tables the session has"
            )
        await rewrite.check(self.upstream, written)
        return written

    async def _counted(self, rewrite: Rewrite, written: Written) -> Written:
        """``written`` with the plan's counts, counted apart when Spark sent none."""
        if rewrite.counting is None or rewrite.metric in written.observed:
            return written
        log.info("Spark sent no counts with the rewrite of [%s]; counting", self.table.name)
        (row,) = await self.upstream.rows(rewrite.counting)
        counts = [v for v in row.values() if isinstance(v, int)]
        return dataclasses.replace(written, observed={**written.observed, rewrite.metric: counts})

    async def _explain(self, rewrite: Rewrite, exc: TempTableQueryFailed) -> None:
        """Raise the statement's own error when Spark cannot analyse its query, which failed
        the write too; analysed only after a failure, so a change that works pays nothing."""
        try:
            await self.upstream.schema(rewrite.relation)
        except UpstreamFailed as analysed:
            raise rewrite.failed(analysed) from exc
        except ConnectPluginError:
            return
