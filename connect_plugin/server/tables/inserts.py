"""INSERT into a temp table: checked where its format needs it, its files made private.

Most tables hold every value of their column types, and the INSERT goes to
Spark as it came; where the format refuses some values, its rows are
checked as they are written (``insert_rows``). An overwrite is a rewrite of
the table (``rewrites``, ``overwrites``). The statement is recognised from
SQL (``INSERT INTO|OVERWRITE``, led by ``WITH`` or Hive's ``FROM`` too) and
from a DataFrame write to a table's name (``insertInto``, ``saveAsTable``,
``writeTo``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import StatementSyntaxError, TempTableError, UpstreamFailed
from connect_plugin.server.model.spark_sql import quote_identifier
from connect_plugin.server.model.statements import (
    InsertInto,
    Name,
)
from connect_plugin.server.statements import results
from connect_plugin.server.statements.handlers import FORWARD, Call, Handler, Outcome
from connect_plugin.server.statements.recognition import Cursor
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.table_files.views import files_relation
from connect_plugin.server.tables.catalog import Tables
from connect_plugin.server.tables.insert_rows import (
    checked_input,
    refuse_zeros_before_partition_insert,
    run_insert,
    table_rows,
    table_rules,
    table_zero_columns,
)
from connect_plugin.server.tables.overwrites import (
    replaces_partitions,
    with_partitions_replaced,
    with_rows_replaced,
)
from connect_plugin.server.tables.partition_folders import laid_out
from connect_plugin.server.tables.rewrites import Rewrite, TableRewriter
from connect_plugin.server.tables.value_checks import NOT_NULL
from connect_plugin.server.tables.write_settings import refuse_changing_settings
from connect_plugin.server.transport.plans import deep_messages
from connect_plugin.server.transport.upstream import Upstream


class InsertIntoHandler(Handler[InsertInto]):
    """INSERT into a temp table: its values checked where its format needs it, its files private.

    Most tables hold every value of their column types, and the INSERT goes
    to Spark as it came. Where the format refuses some values (see
    ``value_checks``), a DataFrame ``insertInto`` gets the check in its input
    and a SQL ``INSERT INTO|OVERWRITE [TABLE] name [(columns)] <query>`` is
    run by the gateway with the check; an INSERT with a PARTITION or REPLACE
    clause or BY NAME into such a table is refused, since its rows cannot be
    checked as they will be stored. One led by ``WITH ...`` or Hive's ``FROM
    ...`` is the same INSERT with the lead put before its query (``INSERT INTO
    t WITH ... SELECT``, ``INSERT INTO t FROM src SELECT``), so that its
    overwrite is as atomic and its check as sure as without the lead; a Hive
    multi-insert with a temp table among its targets is refused.
    """

    statement_type = InsertInto
    sql_keywords = frozenset(("INSERT", "WITH", "FROM"))
    needs_tables = True

    def __init__(
        self, tables: Tables, rewriter: TableRewriter, upstream: Upstream, stop_timeout_s: float
    ) -> None:
        self._tables = tables
        self._rewriter = rewriter
        self._upstream = upstream
        self._stop_timeout_s = stop_timeout_s

    @classmethod
    def parse(cls, cursor: Cursor) -> InsertInto | None:
        lead = ""
        if cursor.peek("WITH|FROM"):
            if not _INSERT_WORD.search(cursor.text):
                return None
            word = "WITH" if cursor.peek("WITH") else "FROM"
            cursor.at += 1
            if cursor.peek("INSERT"):
                return None
            lead = f"{word} {cursor.expression('a query', stops=('INSERT INTO|OVERWRITE',))}"
        if cursor.accept("INSERT", "INTO"):
            overwrite = False
        elif cursor.accept("INSERT", "OVERWRITE"):
            overwrite = True
        else:
            return None
        cursor.accept("TABLE")
        name = cursor.name("a table name")
        if lead:
            start = cursor.at
            others = _further_targets(cursor)
            cursor.at = start
            if others:
                return InsertInto(name, overwrite, clause="several targets", others=others)
        columns: tuple[str, ...] = ()
        if cursor.peek("(") and not any(cursor.peek("(", word) for word in _QUERY_STARTS):
            start = cursor.at
            try:
                columns = cursor.name_list("column names")
            except TempTableError:
                # Spark's to judge when the table is not a temp table; ours to refuse if it is.
                cursor.at = start
                return InsertInto(name, overwrite, clause="a column list")
        clause = _insert_clause(cursor)
        if clause == "a PARTITION clause" and not lead:
            rows = _after_partition_spec(cursor)
            relation = cursor.sql.relation_of(rows) if rows else None
            return InsertInto(name, overwrite, clause=clause, partition_rows=relation)
        query = cursor.rest()
        if clause or not query.strip():
            return InsertInto(name, overwrite, clause=clause or "no query")
        if lead:
            if lead.startswith("WITH") and cursor.peek("WITH"):
                query = f"SELECT * FROM ({cursor.statement_rest()}\n)"
            query = f"{lead} {query}"
        return InsertInto(name, overwrite, query=cursor.sql.relation_of(query), columns=columns)

    @classmethod
    def from_plan(cls, plan: spark_proto.Plan) -> InsertInto | None:
        if not plan.HasField("command"):
            return None
        if plan.command.HasField("write_operation_v2"):
            return _written_to(plan.command.write_operation_v2)
        if not plan.command.HasField("write_operation"):
            return None
        write = plan.command.write_operation
        if not write.HasField("table"):
            return None
        name = Name(tuple(write.table.table_name.split(".")))
        modes = spark_proto.WriteOperation.SaveMode
        method = spark_proto.WriteOperation.SaveTable.TableSaveMethod
        if write.table.save_method == method.TABLE_SAVE_METHOD_INSERT_INTO:
            return InsertInto(name, write.mode == modes.SAVE_MODE_OVERWRITE, write=write)
        if write.mode == modes.SAVE_MODE_IGNORE:
            return InsertInto(name, ignore=True)
        if write.mode in (modes.SAVE_MODE_APPEND, modes.SAVE_MODE_OVERWRITE):
            return InsertInto(
                name,
                write.mode == modes.SAVE_MODE_OVERWRITE,
                query=write.input,
                by_name=True,
            )
        return InsertInto(
            name,
            refusal=f"saveAsTable: temporary table [{name}] already exists; write into it "
            "with mode('append') or mode('overwrite')",
        )

    async def execute(self, call: Call, request: InsertInto) -> Outcome:
        """The INSERT run, checked, by the gateway, or left to Spark; either way Spark's
        errors name the table as the statement does, where Spark says ``unknown``."""
        named = ".".join(quote_identifier(part) for part in request.name.parts)
        try:
            outcome = await self._insert(call, request)
        except UpstreamFailed as exc:
            exc.table = named
            raise
        if outcome.result is None and self._tables.lookup(call.context, request.name):
            return dataclasses.replace(outcome, table=named)
        return outcome

    async def _insert(self, call: Call, request: InsertInto) -> Outcome:
        if request.others:
            for target in (request.name, *request.others):
                if self._tables.lookup(call.context, target) is not None:
                    raise TempTableError(
                        f"An INSERT with several target tables cannot write into temporary "
                        f"table [{target}]: write one INSERT INTO {target} ... for it"
                    )
        table = self._tables.lookup(call.context, request.name)
        if table is None:
            return FORWARD
        if request.refusal:
            raise TempTableError(request.refusal)
        if request.ignore:
            return _ran(table.name)
        if request.write is not None and request.name.qualifier is not None:
            # Spark's insertInto finds a temporary view by its bare name only.
            request.write.table.table_name = quote_identifier(table.name)
        query = request.write.input if request.write is not None else request.query
        if request.overwrite and query is not None:
            await self._overwrite(call, request, query)
            return _ran(table.name)
        added = await refuse_changing_settings(
            self._upstream.session(call.context), table, by_spark=True
        )
        if not await asyncio.to_thread(laid_out, table):
            table = await self._lay_out(call, request.name)

        async def secure() -> None:
            await self._tables.written(call.context, request.name)

        if request.by_name and query is not None:
            upstream = self._upstream.session(call.context)
            await run_insert(
                upstream,
                table,
                await table_rows(upstream, table, query, by_name=True),
                (),
                progress=call.progress,
                stop_timeout_s=self._stop_timeout_s,
                added=added,
            )
            await secure()
            return _ran(table.name)

        found, zeros = table_rules(table), table_zero_columns(table)
        if not found and not zeros and not added:
            return Outcome(after=secure)
        upstream = self._upstream.session(call.context)
        if request.write is not None:
            if request.write.HasField("input"):
                source = await checked_input(upstream, table, request.write.input, added=added)
                with deep_messages():
                    request.write.input.CopyFrom(source)
            return Outcome(after=secure)
        if request.query is None:
            if not found:
                if request.partition_rows is not None:
                    await refuse_zeros_before_partition_insert(
                        upstream, table, request.partition_rows
                    )
                return Outcome(after=secure)
            held = ", ".join(f"[{r.column}]" for r in found if r.refuser != NOT_NULL)
            not_null = ", ".join(f"[{r.column}]" for r in found if r.refuser == NOT_NULL)
            why = " and ".join(
                [f"{table.format} cannot hold some values of {held}"] * bool(held)
                + [f"{not_null} are declared NOT NULL"] * bool(not_null)
            )
            raise TempTableError(
                f"INSERT into temporary table [{table.name}] with {request.clause} cannot be "
                f"checked: {why}, and such an INSERT is not checked as it is stored; write "
                f"INSERT INTO {table.name} [(columns)] SELECT ..."
            )
        await run_insert(
            upstream,
            table,
            request.query,
            request.columns,
            progress=call.progress,
            stop_timeout_s=self._stop_timeout_s,
            added=added,
        )
        await secure()
        return _ran(table.name)

    async def _lay_out(self, call: Call, name: Name) -> TempTable:
        """Rewrite a partitioned table an older gateway left without partition folders (see
        ``partition_folders``), so that Spark writes the INSERT into them."""

        async with self._rewriter.rewriting(call.context, name, call.progress) as rewriting:
            table, _ = await rewriting.run(Rewrite(files_relation(rewriting.table)))
        return table

    async def _overwrite(
        self, call: Call, request: InsertInto, query: spark_proto.Relation
    ) -> None:
        """Replace the table's rows by the query's as Spark's overwrite of this kind would
        (``overwrites``), as a rewrite: a failing overwrite leaves the table as it was."""

        async with self._rewriter.rewriting(call.context, request.name, call.progress) as rewriting:
            upstream, table = rewriting.upstream, rewriting.table
            rows = await table_rows(
                upstream, table, query, request.columns, by_name=request.by_name
            )
            if request.condition is not None:
                rows = with_rows_replaced(table, request.condition, rows)
            elif not request.by_name and await replaces_partitions(upstream, table):
                rows = with_partitions_replaced(table, rows)
            await rewriting.run(Rewrite(rows))


def _ran(name: str) -> Outcome:
    """An INSERT the gateway ran itself: answered as Spark answers one, and in a plan that
    Spark runs too, a ``REFRESH TABLE`` of the table in its place."""
    return Outcome(results.refreshed(name), answer=results.inserted())


_QUERY_STARTS = ("SELECT", "WITH", "VALUES", "FROM", "TABLE", "(")
_INSERT_WORD = re.compile(r"\bINSERT\b", re.IGNORECASE)
"""Whether a statement led by WITH or FROM may hold an INSERT (most are queries, and are
not tokenized further)."""


def _written_to(write: spark_proto.WriteOperationV2) -> InsertInto:
    """``DataFrame.writeTo(name)``: append and overwrite write into a temp table of that name;
    the rest would make a table beside it and are refused."""
    name = Name(tuple(write.table_name.split(".")))
    modes = spark_proto.WriteOperationV2.Mode
    if write.mode == modes.MODE_APPEND:
        return InsertInto(name, query=write.input, by_name=True)
    if write.mode == modes.MODE_OVERWRITE:
        condition = write.overwrite_condition if write.HasField("overwrite_condition") else None
        return InsertInto(name, True, query=write.input, by_name=True, condition=condition)
    how = {
        modes.MODE_CREATE: "create()",
        modes.MODE_REPLACE: "replace()",
        modes.MODE_CREATE_OR_REPLACE: "createOrReplace()",
        modes.MODE_OVERWRITE_PARTITIONS: "overwritePartitions()",
    }.get(write.mode, "this write")
    return InsertInto(
        name,
        refusal=f"writeTo([{name}]).{how}: [{name}] is a temporary table of this session, "
        "and this would make another table of that name beside it; use append() or "
        f"overwrite(condition), or CREATE OR REPLACE TEMPORARY TABLE {name} AS ...",
    )


def _further_targets(cursor: Cursor) -> tuple[Name, ...]:
    """The tables of the INSERTs after the first of a Hive multi-insert."""
    found: list[Name] = []
    while not cursor.done():
        try:
            cursor.expression("a query", stops=("INSERT INTO|OVERWRITE",))
        except StatementSyntaxError:
            return tuple(found)
        if not cursor.accept("INSERT", "INTO|OVERWRITE"):
            return tuple(found)
        cursor.accept("TABLE")
        found.append(cursor.name("a table name"))
    return tuple(found)


def _after_partition_spec(cursor: Cursor) -> str:
    """The query after ``PARTITION (...) [IF NOT EXISTS]`` ('' when there is none to find)."""
    start = cursor.at
    try:
        cursor.expect("PARTITION", "PARTITION")
        cursor.parenthesized("a partition spec")
    except StatementSyntaxError:
        return ""
    else:
        cursor.accept("IF", "NOT", "EXISTS")
        return cursor.statement_rest()
    finally:
        cursor.at = start


def _insert_clause(cursor: Cursor) -> str:
    """What stands between an INSERT's table name (and column list) and its query ('' when
    nothing does)."""
    for words, clause in (
        (("PARTITION",), "a PARTITION clause"),
        (("BY", "NAME"), "BY NAME"),
        (("REPLACE",), "a REPLACE clause"),
        (("IF",), "IF NOT EXISTS"),
    ):
        if cursor.peek(*words):
            return clause
    return ""
