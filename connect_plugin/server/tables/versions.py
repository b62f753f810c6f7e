"""A new version of a temp table: its files written, then named, or every step undone.

A CTTAS (``create``) and a rewrite (``rewrites``) both write a version of a
table into a new folder of the session and give it the table's name: the
folder is made private, the session's quota checked, and a temporary view
over the files made (or moved to them). Each step is recorded in the
registry before or after it happens, and every step that fails undoes the
ones before it (the client gone too), so a failed statement leaves no
files, no view and no registry entry, and a replaced version's files go
once no query of the session may still read them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.config import Config
from connect_plugin.errors import ConnectPluginError, RegistryError, WorkspaceError
from connect_plugin.server.sessions.quotas import Quotas
from connect_plugin.server.sessions.registry import Session, SessionRegistry
from connect_plugin.server.sessions.release import to_the_end
from connect_plugin.server.sessions.workspace import Workspace
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.table_files.views import create_view, drop_view
from connect_plugin.server.table_files.writes import (
    ProgressSink,
    Written,
    remove_for_good,
    stop_write,
    write_files,
)
from connect_plugin.server.tables.partition_folders import write_null_partition
from connect_plugin.server.tables.write_settings import refuse_changing_settings
from connect_plugin.server.transport.liveness import Liveness, liveness_of
from connect_plugin.server.transport.upstream import UpstreamSession

log = logging.getLogger(__name__)


class TableVersions:
    """Writes new versions of temp tables and names them, or undoes them."""

    def __init__(self, config: Config, registry: SessionRegistry, workspace: Workspace) -> None:
        self._config = config
        self._registry = registry
        self._workspace = workspace
        self._quotas = Quotas(config, registry)

    async def write_and_swap(
        self,
        session: Session,
        upstream: UpstreamSession,
        table: TempTable,
        relation: spark_proto.Relation,
        existing: TempTable | None,
        *,
        taken: bool,
        progress: ProgressSink,
        outcome: str = "was not created",
        metrics: Sequence[str] = (),
        rows_at: tuple[str, int] | None = None,
        before_swap: Callable[[Written], Awaitable[Written]] | None = None,
    ) -> Written:
        """Write ``table``'s files, check the quota, give it its name, forget ``existing``:
        every step or, on any failure (the client gone too), none (caller holds the lock)."""
        await refuse_changing_settings(upstream, table, by_spark=False)
        operation_id, marking = str(uuid.uuid4()), str(uuid.uuid4())
        self._registry.begin_create(session, table, operation_id, upstream.server_side_session_id)
        viewing = False
        self._registry.write_began(session, operation_id, table.name)
        try:
            written = await write_files(
                upstream,
                relation,
                table,
                partition_columns=table.partition_columns,
                options=table.options,
                progress=progress,
                operation_id=operation_id,
                outcome=outcome,
                metrics=metrics,
                rows_at=rows_at,
            )
            self._registry.write_ended(session, operation_id)
            if table.partition_columns and written.rows == 0:
                self._registry.write_began(session, marking, table.name)
                await write_null_partition(
                    upstream, table, progress=progress, operation_id=marking, outcome=outcome
                )
                self._registry.write_ended(session, marking)
            if before_swap is not None:
                written = await before_swap(written)
            size = await asyncio.to_thread(self._workspace.secure, table.location)
            table = dataclasses.replace(table, size=size)
            self._quotas.check_written(session, table, existing, outcome=outcome)
            viewing = True
            await create_view(upstream, table, replace=taken, outcome=outcome)
        except BaseException:
            self._registry.write_ended(session, operation_id)
            # Also when the client went away (cancelled): the undo must run to its end.
            # A name taken by a plain view of the client's is not ours to give back.
            undo_view = viewing and (existing is not None or not taken)
            marked = self._registry.write_ended(session, marking)
            writes = [operation_id, *([marking] if marked else [])]
            await to_the_end(self._undo(upstream, table, writes, existing, undo_view))
            raise
        table = dataclasses.replace(table, rows=written.rows)
        self._registry.finish_create(session, table, replaced=existing)
        if existing is not None:
            replaced = existing
            self._registry.after_other_calls(session, lambda: self.remove_files(replaced))
        return written

    async def _undo(
        self,
        upstream: UpstreamSession,
        table: TempTable,
        writes: Sequence[str],
        replaced: TempTable | None,
        undo_view: bool,
    ) -> None:
        """Undo a failed or abandoned version: stop Spark's writes, give the name back, delete.

        If the upstream cannot say the writes stopped, the row stays
        ``creating`` for the next start to finish.
        """
        try:
            for operation_id in writes:
                await stop_write(
                    upstream, operation_id, table.name, self._config.recovery_timeout_s
                )
            if undo_view and replaced is not None:
                await create_view(upstream, replaced, replace=True)
            elif undo_view:
                await drop_view(upstream, table.name)
        except ConnectPluginError as exc:
            if liveness_of(exc) is not Liveness.GONE:
                log.warning(
                    "Temporary table [%s]: cannot undo its creation now (%s); the next start "
                    "finishes it",
                    table.name,
                    exc,
                )
                return
        try:
            await remove_for_good(
                lambda: self._workspace.remove(table.location), self._config.recovery_timeout_s
            )
            self._registry.remove([table])
        except (WorkspaceError, RegistryError):
            # The client hears why the CTTAS failed, not why its undo did.
            log.exception("Temporary table [%s]: the next start finishes undoing it", table.name)

    def remove_files(self, table: TempTable) -> None:
        """Delete the files of a dropped table; if that fails its row stays for the next start."""
        try:
            self._workspace.remove(table.location)
        except WorkspaceError:
            log.exception("deleting the files of temporary table [%s] failed", table.name)
            return
        self._registry.remove([table])
