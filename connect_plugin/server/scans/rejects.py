"""The rejects table of ``on_error="reject"``: a temp table of the session, filled by the scan.

When a scan with ``on_error="reject"`` is planned, the gateway creates its
rejects table (``rejects_table``, ``reject_errors`` by default, as in
DuckDB) as an empty parquet temp table of the session, through the same
path as ``CREATE TEMPORARY TABLE``: it lives and dies like any temp table and
shows in ``SHOW TEMPORARY TABLES``. Spark's workers write each source
file's rejects into the table's folder (``connect_plugin.scanning.reading.rejects``);
after the query ran, ``REFRESH TABLE`` makes Spark list the new files.

The table remembers which scan it belongs to (``scan_id``, in its options):
planning the same scan again keeps it (another action on the same
DataFrame rewrites the same files), another scan naming the same table
replaces it. A temp table or view of the user's own with that name is
never replaced.

With the metrics on (``bad_records``), the records a query rejected are
counted after it from the footers of the files it wrote
(``scanning.reading.rejects.rows_written_since``), on a worker thread.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import TempTableExists, TempTableQueryFailed, UpstreamFailed
from connect_plugin.scanning.reading.rejects import REJECTS_SCHEMA, rows_written_since, snapshot
from connect_plugin.scanning.request.spec import ScanSpec
from connect_plugin.server.sessions.views import temp_view_names
from connect_plugin.server.tables.catalog import Tables
from connect_plugin.server.tables.create import TableCreator
from connect_plugin.server.transport.requests import CreateTempTable, Name
from connect_plugin.server.transport.spark_sql import quote_identifier
from connect_plugin.server.transport.upstream import SessionContext, Upstream

REJECTED = "reject"
"""The bad-record policy the records counted here were rejected by."""

REJECTS_OF_OPTION = "connect_plugin.rejects_of_scan"
"""The option of a rejects table that names the scan (``ScanSpec.scan_id``) it belongs to."""

_SQL_TYPES = {"string": "STRING", "int64": "BIGINT"}


def _ignore_progress(response: spark_proto.ExecutePlanResponse) -> None:
    """Creating the empty table is part of planning the scan: it reports no progress."""


class RejectsTables:
    """Creates, keeps or replaces the rejects tables of scans, and refreshes them after a query."""

    def __init__(
        self,
        creator: TableCreator,
        tables: Tables,
        upstream: Upstream,
        bad_records: Callable[[str, int], None] | None = None,
    ) -> None:
        self._creator = creator
        self._tables = tables
        self._upstream = upstream
        self._bad_records = bad_records

    async def prepare(self, session: SessionContext, spec: ScanSpec) -> ScanSpec:
        """The spec with its rejects folder, once the scan's rejects table exists (empty if new)."""
        assert spec.rejects_table is not None
        name = Name((spec.rejects_table,))
        table = self._tables.lookup(session, name)
        if table is not None and table.options.get(REJECTS_OF_OPTION) == spec.scan_id:
            return dataclasses.replace(spec, rejects_folder=str(table.location))
        if table is None and name.name.lower() in await temp_view_names(
            self._upstream.session(session)
        ):
            raise self._taken(name, "temporary view")
        if table is not None and REJECTS_OF_OPTION not in table.options:
            raise self._taken(name, "temporary table")
        request = CreateTempTable(
            name=name,
            input=_empty_rejects(),
            format="parquet",
            options={REJECTS_OF_OPTION: spec.scan_id},
            or_replace=True,
        )
        await self._creator.create(session, request, _ignore_progress)
        created = self._tables.lookup(session, name)
        assert created is not None
        return dataclasses.replace(spec, rejects_folder=str(created.location))

    async def refresher(
        self, session: SessionContext, spec: ScanSpec
    ) -> Callable[[], Awaitable[None]]:
        """Work for after the query: make Spark list the rejects files the query wrote (and
        count the records they hold, with the metrics on)."""
        assert spec.rejects_table is not None
        assert spec.rejects_folder is not None
        name, folder, scan_id = spec.rejects_table, spec.rejects_folder, spec.scan_id
        count = self._bad_records
        before = None if count is None else await asyncio.to_thread(snapshot, folder, scan_id)

        async def refresh() -> None:
            relation = spark_proto.Relation()
            relation.sql.query = f"REFRESH TABLE {quote_identifier(name)}"
            try:
                await self._upstream.session(session).rows(relation)
            except UpstreamFailed as exc:
                raise TempTableQueryFailed(
                    f"the rejects table [{name}] was written but cannot be refreshed: "
                    f"{exc.message}; run REFRESH TABLE {name}"
                ) from exc
            await self._tables.written(session, Name((name,)))
            if count is not None and before is not None:
                count(REJECTED, await asyncio.to_thread(rows_written_since, folder, scan_id, before))

        return refresh

    @staticmethod
    def _taken(name: Name, kind: str) -> TempTableExists:
        return TempTableExists(
            f"rejects_table [{name}] is a {kind} of this session, not the rejects table of a "
            "scan; name another rejects_table, or drop that table first"
        )


def _empty_rejects() -> spark_proto.Relation:
    """A query of no rows with the columns of ``REJECTS_SCHEMA``."""
    columns = ", ".join(
        f"CAST(NULL AS {_SQL_TYPES[str(field.type)]}) AS {field.name}" for field in REJECTS_SCHEMA
    )
    relation = spark_proto.Relation()
    relation.sql.query = f"SELECT {columns} WHERE false"
    return relation
