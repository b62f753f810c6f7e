"""DELETE, UPDATE, MERGE INTO and TRUNCATE of temp tables: the table rewritten whole, then swapped.

Spark's file tables have no row-level changes, but a temp table belongs to
one session, so a change is a new version of the whole table: Spark reads
the table through its view, one query works out every row of the new
version, and ``TableCreator.rewrite`` writes it into a new folder and moves
the view only once the write succeeded. A failing statement leaves the old
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

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.types import pyspark_types_to_proto_types
from pyspark.sql.types import BooleanType, IntegerType, LongType, StructField, StructType

from connect_plugin.errors import (
    MergeCardinalityViolation,
    TempTableError,
    TempTableNotFound,
    TempTableQueryFailed,
    UpstreamFailed,
)
from connect_plugin.server import results
from connect_plugin.server.create import Rewrite, TableCreator
from connect_plugin.server.handlers import FORWARD, Call, Handler, Outcome
from connect_plugin.server.plans import deep_messages
from connect_plugin.server.requests import (
    Assignment,
    ChangeRows,
    DeleteFrom,
    MergeClause,
    MergeInto,
    Name,
    TruncateTable,
    UpdateTable,
)
from connect_plugin.server.session_store import TempTable
from connect_plugin.server.statements import Cursor
from connect_plugin.server.tables import Tables
from connect_plugin.server.upstream import UpstreamSession, quote_identifier

CLAUSE = "__connect_plugin_clause"
TARGET_ROW = "__connect_plugin_target_row"
SOURCE_ROW = "__connect_plugin_source_row"
_VALUE = "__connect_plugin_value_{}_{}"
_SOURCE_QUERY = "__connect_plugin_source"
KEEP = -1
"""The clause index of a table row no clause changes."""
SKIP = -2
"""The clause index of a source row no clause inserts."""
REPEATED = -3
"""The clause index of a table row's second and later matches, where a MERGE may have them
(no WHEN MATCHED clause, or only an unconditional DELETE): the row is kept or deleted once."""

MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE, EVERY_ROW = (
    "matched",
    "not matched",
    "not matched by source",
    "every row",
)
UPDATE, DELETE, INSERT = "update", "delete", "insert"
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
COUNTED = (UPDATE, DELETE, INSERT)
"""The order of the counts in the observation of a row change."""


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

    def __init__(self, tables: Tables, creator: TableCreator) -> None:
        self._tables = tables
        self._creator = creator

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
        metric = f"connect_plugin_changes_{uuid.uuid4().hex}"

        async def rows_of(upstream: UpstreamSession, table: TempTable) -> Rewrite:
            if not await self._tables.view_is_table(upstream, table):
                raise TempTableNotFound(
                    f"{request.describe()}: the view of temporary table [{table.name}] was "
                    "dropped or replaced outside the gateway; SHOW TEMPORARY TABLES lists the "
                    "tables the session has"
                )
            plan = Plan.of(request, table)
            relation = plan.relation(metric)
            try:
                await upstream.schema(relation)
                twice = [] if plan.cardinality is None else await upstream.rows(_sql(plan.cardinality))
            except UpstreamFailed as exc:
                raise TempTableQueryFailed(
                    f"{request.describe()}: {plan.in_user_terms(exc.message)}"
                ) from exc
            if twice:
                raise MergeCardinalityViolation(
                    f"{request.describe()}: the ON condition matched a row of the table with "
                    "several rows of the source, so that row would be changed more than once; "
                    "nothing was changed. Make each table row match at most one source row"
                )
            return Rewrite(relation, metric, plan.counting())

        _, written = await self._creator.rewrite(call.context, request.name, rows_of, call.progress)
        counts = Counts(*written.observed[metric])
        if isinstance(request, MergeInto):
            row: results.Row = (counts.affected, counts.updated, counts.deleted, counts.inserted)
            return Outcome(results.result_relation(MERGE_COLUMNS, [row]))
        return Outcome(results.result_relation(AFFECTED_COLUMNS, [(counts.affected,)]))


class DeleteHandler(_ChangeRowsHandler):
    request_type = DeleteFrom
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
    request_type = UpdateTable
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
    request_type = TruncateTable
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
    request_type = MergeInto
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


@dataclass(frozen=True)
class Plan:
    """The query that computes the new version of a table for a row change.

    ``select``: SQL with the table's columns (old values), the index of the
    clause applying to each row (``CLAUSE``) and each clause's new values;
    ``values``: per clause, the value column of each table column it sets.
    """

    table: TempTable
    schema: StructType
    clauses: tuple[MergeClause, ...]
    select: str
    values: tuple[dict[int, str | None], ...]
    cardinality: str | None
    """For a MERGE that must match each table row at most once: SQL that finds a row of
    the table matched by several source rows (Spark's ``MERGE_CARDINALITY_VIOLATION``)."""

    @classmethod
    def of(cls, request: ChangeRows, table: TempTable) -> Plan:
        schema = StructType.fromJson(json.loads(table.schema_json))
        target = quote_identifier(request.alias or table.name)
        if isinstance(request, MergeInto):
            clauses = request.clauses
            source = quote_identifier(request.source_alias or _SOURCE_QUERY)
            source_text = request.source
            if source_text.startswith("("):
                source_text = f"{source_text} AS {quote_identifier(_SOURCE_QUERY)}"
            numbered = (
                f"(SELECT *, monotonically_increasing_id() AS {TARGET_ROW} FROM "
                f"{quote_identifier(table.name)}) AS {target}"
            )
            sourced = f"(SELECT *, TRUE AS {SOURCE_ROW} FROM {source_text}) AS {source}"
            rows = f"{numbered} FULL OUTER JOIN {sourced} ON ({request.on})"
            branches = {
                MATCHED: f"{target}.{TARGET_ROW} IS NOT NULL AND {source}.{SOURCE_ROW} IS NOT NULL",
                NOT_MATCHED_BY_SOURCE: f"{source}.{SOURCE_ROW} IS NULL",
                NOT_MATCHED: f"{target}.{TARGET_ROW} IS NULL",
            }
            extra = [f"{target}.{TARGET_ROW} AS {TARGET_ROW}", f"{source}.{SOURCE_ROW} AS {SOURCE_ROW}"]
            matched = [c for c in clauses if c.branch == MATCHED]
            check = bool(matched) and not (
                len(matched) == 1 and matched[0].action == DELETE and matched[0].condition is None
            )
            cardinality = (
                f"SELECT 1 FROM {numbered} JOIN {sourced} ON ({request.on}) GROUP BY "
                f"{target}.{TARGET_ROW} HAVING count(1) > 1 LIMIT 1"
                if check
                else None
            )
        else:
            source = ""
            clauses = (_only_clause(request),)
            rows = f"{quote_identifier(table.name)} AS {target}"
            branches = {EVERY_ROW: "TRUE"}
            extra, cardinality = [], None
        names = {_key(f.name): i for i, f in enumerate(schema.fields)}
        values = tuple(
            _clause_values(request, clause, schema, names, target, source) for clause in clauses
        )
        select = [f"{target}.{quote_identifier(f.name)} AS {quote_identifier(f.name)}" for f in schema.fields]
        select += extra
        select.append(f"{_clause_index(clauses, branches)} AS {CLAUSE}")
        for k in range(len(clauses)):
            guard = _guard(clauses, k, branches)
            for i, expression in values[k].items():
                if expression is not None:
                    select.append(f"CASE WHEN {guard} THEN ({expression}) END AS {_VALUE.format(k, i)}")
        return cls(
            table,
            schema,
            clauses,
            f"SELECT {', '.join(select)} FROM {rows}",
            tuple(
                {i: None if e is None else _VALUE.format(k, i) for i, e in v.items()}
                for k, v in enumerate(values)
            ),
            cardinality,
        )

    def _typed(self) -> spark_proto.Relation:
        """The select, its values cast to their columns' types, the MERGE's cardinality checked."""
        fields = [StructField(f.name, f.dataType, True, f.metadata) for f in self.schema.fields]
        if any(c.branch != EVERY_ROW for c in self.clauses):
            fields += [StructField(TARGET_ROW, LongType()), StructField(SOURCE_ROW, BooleanType())]
        fields.append(StructField(CLAUSE, IntegerType()))
        for v in self.values:
            for i, column in v.items():
                if column is not None:
                    fields.append(StructField(column, self.schema.fields[i].dataType))
        relation = spark_proto.Relation()
        relation.to_schema.input.sql.query = self.select
        relation.to_schema.schema.CopyFrom(pyspark_types_to_proto_types(StructType(fields)))
        if all(c.branch == EVERY_ROW for c in self.clauses):
            return relation
        matches = spark_proto.Relation()
        with deep_messages():
            matches.project.input.CopyFrom(relation)
        if self.cardinality is not None:
            return relation
        repeated = (
            f"{SOURCE_ROW} IS NOT NULL AND row_number() OVER (PARTITION BY {TARGET_ROW} "
            f"ORDER BY {TARGET_ROW}) > 1 THEN {REPEATED}"
        )
        for field in fields:
            expression = quote_identifier(field.name)
            if field.name == CLAUSE:
                expression = (
                    f"CASE WHEN {TARGET_ROW} IS NOT NULL AND {repeated} ELSE {CLAUSE} END AS "
                    f"{CLAUSE}"
                )
            matches.project.expressions.add().expression_string.expression = expression
        return matches

    def in_user_terms(self, message: str) -> str:
        """Spark's first line about the statement's query, with the statement's column
        names for the value columns the query computes them in."""
        first = message.split("\n", 1)[0]
        named = [
            (column, self.schema.fields[i].name + (f" (clause {k + 1})" if k else ""))
            for k, values in enumerate(self.values)
            for i, column in values.items()
            if column is not None
        ]
        for column, name in sorted(named, key=lambda pair: -len(pair[0])):
            first = first.replace(column, name)
        return first

    def _metrics(self) -> list[str]:
        def count(action: str) -> str:
            found = [str(k) for k, c in enumerate(self.clauses) if c.action == action]
            condition = f"{CLAUSE} IN ({', '.join(found)})" if found else "FALSE"
            return f"count_if({condition}) AS {action}"

        return [count(action) for action in COUNTED]

    def relation(self, metric: str) -> spark_proto.Relation:
        """The table's new rows, with the observation ``metric`` counting the changes."""
        observed = spark_proto.Relation()
        with deep_messages():
            observed.collect_metrics.input.CopyFrom(self._typed())
        observed.collect_metrics.name = metric
        for expression in self._metrics():
            observed.collect_metrics.metrics.add().expression_string.expression = expression
        dropped = [str(k) for k, c in enumerate(self.clauses) if c.action == DELETE]
        dropped += [str(SKIP), str(REPEATED)]
        kept = spark_proto.Relation()
        with deep_messages():
            kept.filter.input.CopyFrom(observed)
        kept.filter.condition.expression_string.expression = (
            f"NOT ({CLAUSE} IN ({', '.join(dropped)}))"
        )
        new = spark_proto.Relation()
        with deep_messages():
            new.project.input.CopyFrom(kept)
        for i, field in enumerate(self.schema.fields):
            column = quote_identifier(field.name)
            cases = []
            for k, clause in enumerate(self.clauses):
                if clause.action == UPDATE and i in self.values[k]:
                    cases.append(f"WHEN {k} THEN {self.values[k][i]}")
                elif clause.action == INSERT:
                    cases.append(f"WHEN {k} THEN {self.values[k].get(i) or 'NULL'}")
            value = f"CASE {CLAUSE} {' '.join(cases)} ELSE {column} END" if cases else column
            new.project.expressions.add().expression_string.expression = f"{value} AS {column}"
        return new

    def counting(self) -> spark_proto.Relation:
        """The rows each kind of clause changes, counted without writing (when Spark sends
        no observed metrics with a write)."""
        relation = spark_proto.Relation()
        with deep_messages():
            relation.aggregate.input.CopyFrom(self._typed())
        relation.aggregate.group_type = spark_proto.Aggregate.GroupType.GROUP_TYPE_GROUPBY
        for expression in self._metrics():
            relation.aggregate.aggregate_expressions.add().expression_string.expression = expression
        return relation


def _sql(query: str) -> spark_proto.Relation:
    relation = spark_proto.Relation()
    relation.sql.query = query
    return relation


def _only_clause(request: ChangeRows) -> MergeClause:
    if isinstance(request, UpdateTable):
        return MergeClause(EVERY_ROW, UPDATE, request.condition, request.assignments)
    if isinstance(request, DeleteFrom):
        return MergeClause(EVERY_ROW, DELETE, request.condition)
    return MergeClause(EVERY_ROW, DELETE)


def _key(name: str) -> str:
    return name.lower()


def _clause_values(
    request: ChangeRows,
    clause: MergeClause,
    schema: StructType,
    names: dict[str, int],
    target: str,
    source: str,
) -> dict[int, str | None]:
    """For an UPDATE or INSERT clause, the expression each table column gets (None: NULL)."""
    if clause.action == DELETE:
        return {}
    if clause.star:
        return {i: f"{source}.{quote_identifier(f.name)}" for i, f in enumerate(schema.fields)}
    found: dict[int, str | None] = {}
    for assignment in clause.assignments:
        at = _column(request, assignment.column, names, schema)
        if at in found:
            raise TempTableError(
                f"{request.describe()}: column [{schema.fields[at].name}] is set twice in one "
                "clause"
            )
        found[at] = assignment.expression
    if clause.action == INSERT:
        return {i: found.get(i) for i in range(len(schema.fields))}
    return found


def _column(request: ChangeRows, column: Name, names: dict[str, int], schema: StructType) -> int:
    qualifiers = {_key(q) for q in (request.alias, request.name.name) if q}
    parts = column.parts
    if len(parts) == 2 and _key(parts[0]) in qualifiers:
        parts = parts[1:]
    if len(parts) != 1:
        raise TempTableError(
            f"{request.describe()}: cannot set [{column}]: set whole columns of the table "
            f"({', '.join(schema.names)}); a nested field is set by giving its column a new "
            "struct"
        )
    at = names.get(_key(parts[0]))
    if at is None:
        raise TempTableError(
            f"{request.describe()}: the table has no column [{column}]; its columns are "
            + ", ".join(schema.names)
        )
    return at


def _clause_index(clauses: Sequence[MergeClause], branches: dict[str, str]) -> str:
    """SQL for the index of the clause that applies to a row (``KEEP``/``SKIP``: none)."""
    parts = []
    for branch, predicate in branches.items():
        cases = [
            f"WHEN {_condition(c)} THEN {k}" for k, c in enumerate(clauses) if c.branch == branch
        ]
        otherwise = SKIP if branch == NOT_MATCHED else KEEP
        chosen = f"CASE {' '.join(cases)} ELSE {otherwise} END" if cases else str(otherwise)
        parts.append(f"WHEN {predicate} THEN {chosen}")
    return f"CASE {' '.join(parts)} END"


def _guard(clauses: Sequence[MergeClause], k: int, branches: dict[str, str]) -> str:
    """SQL that is true exactly for the rows clause ``k`` applies to, evaluating the
    conditions in the order the statement gives them."""
    clause = clauses[k]
    earlier = [
        f"WHEN {_condition(c)} THEN FALSE" for c in clauses[:k] if c.branch == clause.branch
    ]
    inner = f"CASE {' '.join(earlier)} WHEN {_condition(clause)} THEN TRUE ELSE FALSE END"
    return f"(CASE WHEN {branches[clause.branch]} THEN {inner} ELSE FALSE END)"


def _condition(clause: MergeClause) -> str:
    return "TRUE" if clause.condition is None else f"({clause.condition})"
