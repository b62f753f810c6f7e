"""The rejects table of ``on_error="reject"``: a temp table of the session, filled by the scan.

When a scan with ``on_error="reject"`` is planned, the gateway makes sure
its rejects table (``rejects_table``, ``reject_errors`` by default, as in
DuckDB) exists, creating it as an empty parquet temp table of the session
through the same path as ``CREATE TEMPORARY TABLE``: it lives and dies like
any temp table and shows in ``SHOW TEMPORARY TABLES``. Spark's workers write
each source file's rejects into the table's folder
(``connect_plugin.scanning.reading.rejects``), one file per scan and source
file; after the query ran, ``REFRESH TABLE`` makes Spark list them.

The table is never replaced while a query may be writing into it: every
scan of a query that names it (the same scan twice, filtered or not, or
different scans) writes into the one folder. Once the query ran, the
rejects of other scans are deleted, except files written during the query
(a scan view's, which the gateway does not see run): the table then holds
the rejects of the scans the query read, each bad record once. A temp table
or view of the user's own with that name is never touched.

With the metrics on (``bad_records``), the records a query rejected are
counted after it from the footers of the files it wrote
(``scanning.reading.rejects.rows_written_since``), on a worker thread.
"""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from pyspark.sql.connect import proto as spark_proto

from connect_plugin import scanning
from connect_plugin.errors import TempTableExists, TempTableQueryFailed, UpstreamFailed
from connect_plugin.scanning import ScanSpec
from connect_plugin.server.model.spark_sql import quote_identifier
from connect_plugin.server.model.statements import CreateTempTable, Name
from connect_plugin.server.statements.handlers import Call
from connect_plugin.server.table_files.views import temp_view_names
from connect_plugin.server.tables.catalog import Tables
from connect_plugin.server.tables.create import TableCreator
from connect_plugin.server.transport.upstream import SessionContext, Upstream

REJECTED = "reject"
"""The bad-record policy the records counted here were rejected by."""

REJECTS_OF_OPTION = "connect_plugin.rejects_of_scan"
"""The option that marks a temp table as a rejects table (its value: the scan that made it)."""

_SQL_TYPES = {"string": "STRING", "int64": "BIGINT"}

After = Callable[[], Awaitable[None]]


def _ignore_progress(response: spark_proto.ExecutePlanResponse) -> None:
    """Creating the empty table is part of planning the scan: it reports no progress."""


@dataclass
class _Filling:
    """A rejects table as one query fills it: its folder and the scans that write into it."""

    name: str
    folder: str
    scan_ids: set[str] = field(default_factory=set)


class RejectsTables:
    """Creates the rejects tables of scans, and refreshes them after a query."""

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
        self._fillings: dict[int, dict[str, _Filling]] = {}
        """Per query (the id of its ``Call``, forgotten with it), the tables its scans fill."""

    async def fill(
        self, session: SessionContext, spec: ScanSpec, query: Call
    ) -> tuple[ScanSpec, After | None]:
        """The spec with its rejects folder, once its rejects table exists (empty if new), and
        the work for after ``query`` ran: none for a table another scan of ``query`` fills
        too, whose first scan's work covers it."""
        assert spec.rejects_table is not None
        fillings = self._fillings.get(id(query))
        if fillings is None:
            fillings = self._fillings[id(query)] = {}
            weakref.finalize(query, self._fillings.pop, id(query), None)
        key = spec.rejects_table.lower()
        filling = fillings.get(key)
        if filling is not None:
            filling.scan_ids.add(spec.scan_id)
            return dataclasses.replace(spec, rejects_folder=filling.folder), None
        folder = await self._folder(session, spec)
        filling = fillings[key] = _Filling(spec.rejects_table, folder, {spec.scan_id})
        before = await asyncio.to_thread(scanning.rejects.snapshot, folder)
        return (
            dataclasses.replace(spec, rejects_folder=folder),
            self._refresher(session, filling, before),
        )

    async def _folder(self, session: SessionContext, spec: ScanSpec) -> str:
        """The folder of the scan's rejects table, which is made if there is none."""
        assert spec.rejects_table is not None
        name = Name((spec.rejects_table,))
        table = self._tables.lookup(session, name)
        if table is None:
            if name.name.lower() in await temp_view_names(self._upstream.session(session)):
                raise self._taken(name, "temporary view")
            request = CreateTempTable(
                name=name,
                input=_empty_rejects(),
                format="parquet",
                options={REJECTS_OF_OPTION: spec.scan_id},
                if_not_exists=True,
            )
            await self._creator.create(session, request, _ignore_progress)
            table = self._tables.lookup(session, name)
            assert table is not None
        if REJECTS_OF_OPTION not in table.options:
            raise self._taken(name, "temporary table")
        return str(table.location)

    def _refresher(
        self, session: SessionContext, filling: _Filling, before: scanning.rejects.Snapshot
    ) -> After:
        """Work for after the query: delete the rejects of scans it did not read, make Spark
        list the files it wrote (and count the records they hold, with the metrics on)."""
        count = self._bad_records

        async def refresh() -> None:
            scan_ids = frozenset(filling.scan_ids)
            await asyncio.to_thread(
                scanning.rejects.delete_other_scans, filling.folder, scan_ids, before
            )
            relation = spark_proto.Relation()
            relation.sql.query = f"REFRESH TABLE {quote_identifier(filling.name)}"
            try:
                await self._upstream.session(session).rows(relation)
            except UpstreamFailed as exc:
                raise TempTableQueryFailed(
                    f"the rejects table [{filling.name}] was written but cannot be refreshed: "
                    f"{exc.message}; run REFRESH TABLE {filling.name}"
                ) from exc
            await self._tables.written(session, Name((filling.name,)))
            if count is not None:
                count(
                    REJECTED,
                    await asyncio.to_thread(
                        scanning.rejects.rows_written_since, filling.folder, before
                    ),
                )

        return refresh

    @staticmethod
    def _taken(name: Name, kind: str) -> TempTableExists:
        return TempTableExists(
            f"rejects_table [{name}] is a {kind} of this session, not the rejects table of a "
            "scan; name another rejects_table, or drop that table first"
        )


def _empty_rejects() -> spark_proto.Relation:
    """A query of no rows with the columns of ``scanning.rejects.REJECTS_SCHEMA``."""
    columns = ", ".join(
        f"CAST(NULL AS {_SQL_TYPES[str(column.type)]}) AS {column.name}"
        for column in scanning.rejects.REJECTS_SCHEMA
    )
    relation = spark_proto.Relation()
    relation.sql.query = f"SELECT {columns} WHERE false"
    return relation
