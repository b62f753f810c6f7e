"""DELETE, UPDATE, MERGE INTO and TRUNCATE of temp tables: the table rewritten whole, then swapped.

Spark's file tables have no row-level changes, but a temp table belongs to
one session, so a change is a new version of the whole table: Spark reads
the table through its view, one query works out every row of the new
version (``RowChange``, planned from the table under the session's lock),
and ``Rewriting.run`` writes it into a new folder and moves the view only
once the write succeeded (``rewrites``). A failing statement leaves the old
table exactly as it was.

Every statement becomes a list of clauses in the shape of MERGE's ``WHEN``
clauses (UPDATE is one ``update`` clause, DELETE and TRUNCATE one ``delete``
clause, on every row), and one query over the table (for MERGE, the table
full outer joined with the source) computes for each row the index of the
clause that applies to it, the clause's new values, and the row's old
values. The user's expressions are put in as written (cut out of the
statement by their tokens), so Spark resolves and types them as it would in
its own statements, with the statement's aliases. A clause's condition is
evaluated only in its branch and after the earlier clauses' conditions
failed, and its values only for the rows it applies to, as in Spark's MERGE.
The values are cast to the table's column types by Spark's store-assignment
rules (``DataFrame.to``), and the rows a clause changed are counted by an
observation on the same job. A MERGE that must match each table row at
most once is checked by one grouped join of the table and the source
before anything is written (a window over the whole merge would double its
cost); one that may match a row twice (no WHEN MATCHED clause, or only an
unconditional DELETE) keeps or deletes such a row once.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import (
    MergeCardinalityViolation,
    TempTableError,
    UpstreamFailed,
)
from connect_plugin.server.model.spark_sql import quote_identifier
from connect_plugin.server.model.statements import (
    Assignment,
    ChangeRows,
    DeleteFrom,
    MergeClause,
    MergeInto,
    Name,
    TruncateTable,
    UpdateTable,
)
from connect_plugin.server.statements import results
from connect_plugin.server.statements.handlers import FORWARD, Call, Handler, Outcome
from connect_plugin.server.statements.recognition import Cursor
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.table_files.writes import Written
from connect_plugin.server.tables.catalog import Tables
from connect_plugin.server.tables.rewrites import Rewrite, TableRewriter
from connect_plugin.server.tables.row_change_plans import (
    COUNTED,
    DELETE,
    EVERY_ROW,
    INSERT,
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    TARGETS_OUT,
    UPDATE,
    WRITTEN,
    Plan,
)
from connect_plugin.server.transport.upstream import UpstreamSession

_ACTIONS = {
    MATCHED: (UPDATE, DELETE),
    NOT_MATCHED_BY_SOURCE: (UPDATE, DELETE),
    NOT_MATCHED: (INSERT,),
    EVERY_ROW: (UPDATE, DELETE),
}

_SPARK_BRANCH = {
    MATCHED: "MATCHED",
    NOT_MATCHED: "NOT_MATCHED_BY_TARGET",
    NOT_MATCHED_BY_SOURCE: "NOT_MATCHED_BY_SOURCE",
}

AFFECTED_COLUMNS = (("num_affected_rows", "BIGINT"),)
MERGE_COLUMNS = (
    ("num_affected_rows", "BIGINT"),
    ("num_updated_rows", "BIGINT"),
    ("num_deleted_rows", "BIGINT"),
    ("num_inserted_rows", "BIGINT"),
)



@dataclass(frozen=True)
class RowChange(Rewrite):
    """A row change's rewrite of a temp table, planned from the table: the query of its new
    version (``plan``), and the counts it answers with."""

    plan: Plan = field(kw_only=True)

    @classmethod
    def of(cls, request: ChangeRows, table: TempTable) -> RowChange:
        plan = Plan.of(request, table)
        if plan.deletes_only:
            return cls(plan.relation(""), statement=request.describe(), plan=plan)
        metric = f"connect_plugin_changes_{uuid.uuid4().hex}"
        return cls(
            plan.relation(metric),
            metric,
            plan.counting(),
            rows_at=WRITTEN,
            statement=request.describe(),
            plan=plan,
        )

    def in_user_terms(self, message: str) -> str:
        return self.plan.in_user_terms(message)

    async def check(self, upstream: UpstreamSession, written: Written) -> None:
        """A MERGE that must match each table row at most once, and did not: refused before
        its rows become the table."""
        plan = self.plan
        if plan.cardinality is None:
            return
        held = plan.table.rows
        came_out = written.observed[self.metric]
        if held is not None and len(came_out) > TARGETS_OUT:
            twice = came_out[TARGETS_OUT] > held
        else:
            try:
                twice = bool(await upstream.rows(_sql(plan.cardinality)))
            except UpstreamFailed as exc:
                raise self.failed(exc) from exc
        if twice:
            raise MergeCardinalityViolation(
                f"{self.statement}: the ON condition matched a row of the table with several "
                "rows of the source, so that row would be changed more than once; nothing was "
                "changed. Make each table row match at most one source row"
            )

    def counts(self, written: Written) -> Counts:
        """The rows the change updated, deleted and inserted: observed in the write, or for
        a plan that ``deletes_only``, the table's rows before less those written."""
        plan = self.plan
        if plan.deletes_only:
            assert plan.table.rows is not None
            return Counts(0, plan.table.rows - written.rows, 0)
        return Counts(*written.observed[self.metric][: len(COUNTED)])


@dataclass(frozen=True)
class Counts:
    """The rows each kind of clause changed."""

    updated: int
    deleted: int
    inserted: int

    @property
    def affected(self) -> int:
        return self.updated + self.deleted + self.inserted


def _alias(cursor: Cursor, *following: str) -> str | None:
    """``[AS] alias`` after a table name, unless the next word is one of ``following``."""
    if cursor.accept("AS"):
        return cursor.identifier("an alias after AS")
    if cursor.done() or cursor.peek(";") or any(cursor.peek(*w.split()) for w in following):
        return None
    return cursor.identifier("an alias")


def _assignments(cursor: Cursor, *stops: str) -> tuple[Assignment, ...]:
    found = []
    while True:
        column = cursor.name("a column to set")
        cursor.expect(f"'=' after [{column}]", "=")
        found.append(Assignment(column, cursor.expression(f"a value for [{column}]", stops=stops, comma=True)))
        if not cursor.accept(","):
            return tuple(found)


def _finish(cursor: Cursor, statement: str) -> None:
    leftover = cursor.leftover()
    if leftover:
        raise cursor.error(f"{statement}: [{leftover}] follows the statement; expected its end")


def _parsed(cursor: Cursor, request: ChangeRows, rest: Any) -> ChangeRows:
    """``request`` completed by ``rest(cursor)``, or with the problem that stopped it."""
    try:
        return rest(cursor)  # type: ignore[no-any-return]
    except TempTableError as exc:
        return type(request)(name=request.name, problem=str(exc))


class _ChangeRowsHandler(Handler[ChangeRows]):
    """Runs a row change on a temp table; on any other table the statement is Spark's."""

    needs_tables = True

    def __init__(self, tables: Tables, rewriter: TableRewriter) -> None:
        self._tables = tables
        self._rewriter = rewriter

    async def analyze(self, call: Call, request: ChangeRows) -> Outcome:
        if self._tables.lookup(call.context, request.name) is None:
            return FORWARD
        columns = MERGE_COLUMNS if isinstance(request, MergeInto) else AFFECTED_COLUMNS
        return Outcome(results.result_relation(columns, []))

    async def execute(self, call: Call, request: ChangeRows) -> Outcome:
        if self._tables.lookup(call.context, request.name) is None:
            return FORWARD
        if request.problem:
            raise TempTableError(f"{request.describe()}: {request.problem}")
        async with self._rewriter.rewriting(call.context, request.name, call.progress) as rewriting:
            change = RowChange.of(request, rewriting.table)
            _, written = await rewriting.run(change)
        counts = change.counts(written)
        if isinstance(request, MergeInto):
            row: results.Row = (counts.affected, counts.updated, counts.deleted, counts.inserted)
            return Outcome.of_rows(MERGE_COLUMNS, [row])
        return Outcome.of_rows(AFFECTED_COLUMNS, [(counts.affected,)])


class DeleteHandler(_ChangeRowsHandler):
    statement_type = DeleteFrom
    sql_keywords = frozenset(("DELETE",))

    @classmethod
    def parse(cls, cursor: Cursor) -> ChangeRows | None:
        if not cursor.accept("DELETE", "FROM"):
            return None
        name = cursor.name("a table name")

        def rest(cursor: Cursor) -> DeleteFrom:
            alias = _alias(cursor, "WHERE")
            condition = None
            if cursor.accept("WHERE"):
                condition = cursor.expression("a condition after WHERE")
            _finish(cursor, f"DELETE FROM [{name}]")
            return DeleteFrom(name, alias, condition=condition)

        return _parsed(cursor, DeleteFrom(name), rest)


class UpdateHandler(_ChangeRowsHandler):
    statement_type = UpdateTable
    sql_keywords = frozenset(("UPDATE",))

    @classmethod
    def parse(cls, cursor: Cursor) -> ChangeRows | None:
        if not cursor.accept("UPDATE"):
            return None
        name = cursor.name("a table name")

        def rest(cursor: Cursor) -> UpdateTable:
            alias = _alias(cursor, "SET")
            cursor.expect(f"SET after UPDATE [{name}]", "SET")
            assignments = _assignments(cursor, "WHERE")
            condition = None
            if cursor.accept("WHERE"):
                condition = cursor.expression("a condition after WHERE")
            _finish(cursor, f"UPDATE [{name}]")
            return UpdateTable(name, alias, assignments=assignments, condition=condition)

        return _parsed(cursor, UpdateTable(name), rest)


class TruncateHandler(_ChangeRowsHandler):
    statement_type = TruncateTable
    sql_keywords = frozenset(("TRUNCATE",))

    @classmethod
    def parse(cls, cursor: Cursor) -> ChangeRows | None:
        if not cursor.accept("TRUNCATE", "TABLE"):
            return None
        name = cursor.name("a table name")

        def rest(cursor: Cursor) -> TruncateTable:
            if cursor.peek("PARTITION"):
                raise cursor.error(
                    f"TRUNCATE TABLE [{name}] PARTITION (...) is not supported on temporary "
                    f"tables; write DELETE FROM {name} WHERE <partition column> = <value>"
                )
            _finish(cursor, f"TRUNCATE TABLE [{name}]")
            return TruncateTable(name)

        return _parsed(cursor, TruncateTable(name), rest)


class MergeHandler(_ChangeRowsHandler):
    statement_type = MergeInto
    sql_keywords = frozenset(("MERGE",))

    @classmethod
    def parse(cls, cursor: Cursor) -> ChangeRows | None:
        if not cursor.accept("MERGE"):
            return None
        evolving = cursor.accept("WITH", "SCHEMA", "EVOLUTION")
        if not cursor.accept("INTO"):
            return None
        name = cursor.name("a table name")

        def rest(cursor: Cursor) -> MergeInto:
            if evolving:
                raise cursor.error(
                    f"MERGE WITH SCHEMA EVOLUTION INTO [{name}]: a temporary table keeps its "
                    "columns; leave out WITH SCHEMA EVOLUTION"
                )
            alias = _alias(cursor, "USING")
            cursor.expect(f"USING after MERGE INTO [{name}]", "USING")
            if cursor.peek("("):
                source = f"({cursor.parenthesized('the source query')})"
                source_alias = _alias(cursor, "ON")
            else:
                source_name = cursor.name("a source table")
                source = ".".join(quote_identifier(part) for part in source_name.parts)
                source_alias = _alias(cursor, "ON") or source_name.name
            cursor.expect("ON after the source of the MERGE", "ON")
            on = cursor.expression("a condition after ON", stops=("WHEN",))
            clauses = []
            while cursor.accept("WHEN"):
                clauses.append(_clause(cursor))
            if not clauses:
                raise cursor.error(f"MERGE INTO [{name}]: expected WHEN [NOT] MATCHED")
            for branch in (MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE):
                held = [c for c in clauses if c.branch == branch]
                if any(c.condition is None for c in held[:-1]):
                    raise TempTableError(
                        f"MERGE INTO [{name}]: only the last WHEN {branch.upper()} clause may "
                        "omit its condition: the clauses after one without a condition would "
                        f"never apply (NON_LAST_{_SPARK_BRANCH[branch]}_CLAUSE_OMIT_CONDITION)"
                    )
            _finish(cursor, f"MERGE INTO [{name}]")
            return MergeInto(
                name,
                alias,
                source=source,
                source_alias=source_alias,
                on=on,
                clauses=tuple(clauses),
            )

        return _parsed(cursor, MergeInto(name), rest)


def _clause(cursor: Cursor) -> MergeClause:
    if cursor.accept("MATCHED"):
        branch = MATCHED
    elif cursor.accept("NOT", "MATCHED"):
        branch = NOT_MATCHED_BY_SOURCE if cursor.accept("BY", "SOURCE") else NOT_MATCHED
        if branch == NOT_MATCHED:
            cursor.accept("BY", "TARGET")
    else:
        raise cursor.error("expected MATCHED or NOT MATCHED after WHEN")
    condition = None
    assignments: tuple[Assignment, ...] = ()
    if cursor.accept("AND"):
        condition = cursor.expression("a condition after AND", stops=("THEN",))
    cursor.expect(f"THEN after WHEN {branch.upper()}", "THEN")
    if cursor.accept("DELETE"):
        action, star = DELETE, False
    elif cursor.accept("UPDATE", "SET"):
        action = UPDATE
        star = cursor.accept("*")
        if not star:
            assignments = _assignments(cursor, "WHEN")
    elif cursor.accept("INSERT"):
        action = INSERT
        star = cursor.accept("*")
        if not star:
            assignments = _inserted(cursor)
    else:
        raise cursor.error("expected UPDATE SET, DELETE or INSERT after THEN")
    if action not in _ACTIONS[branch]:
        raise cursor.error(
            f"WHEN {branch.upper()} takes "
            + " or ".join(a.upper() for a in _ACTIONS[branch])
            + f", not {action.upper()}"
        )
    return MergeClause(branch, action, condition, assignments, star)


def _inserted(cursor: Cursor) -> tuple[Assignment, ...]:
    columns = cursor.name_list("columns of the INSERT")
    cursor.expect("VALUES after the INSERT's columns", "VALUES")
    cursor.expect("'(' before the values", "(")
    values = [cursor.expression("a value", comma=True)]
    while cursor.accept(","):
        values.append(cursor.expression("a value", comma=True))
    cursor.expect("')' after the values", ")")
    if len(values) != len(columns):
        raise cursor.error(
            f"INSERT names {len(columns)} columns ({', '.join(columns)}) but gives "
            f"{len(values)} values"
        )
    return tuple(Assignment(Name((c,)), v) for c, v in zip(columns, values, strict=True))


def _sql(query: str) -> spark_proto.Relation:
    relation = spark_proto.Relation()
    relation.sql.query = query
    return relation
