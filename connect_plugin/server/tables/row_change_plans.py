"""The query that computes the new version of a temp table for a row change.

See ``row_changes``: every statement is a list of MERGE-shaped clauses, and
one query over the table (for MERGE, full outer joined with the source)
gives each row the index of the clause that applies to it, that clause's
new values (cast by store assignment) and its old values.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.types import pyspark_types_to_proto_types
from pyspark.sql.types import BooleanType, IntegerType, LongType, StructField, StructType

from connect_plugin.errors import TempTableError
from connect_plugin.server.model.spark_sql import quote_identifier
from connect_plugin.server.model.statements import (
    ChangeRows,
    DeleteFrom,
    MergeClause,
    MergeInto,
    Name,
    UpdateTable,
)
from connect_plugin.server.statements.recognition import compared_column
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.tables.value_checks import nullable_columns
from connect_plugin.server.transport.plans import deep_messages

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
COUNTED = (UPDATE, DELETE, INSERT)
"""The order of the counts in the observation of a row change."""
WRITTEN = len(COUNTED)
"""Where the rows written are among the observation's values, after the counts."""
TARGETS_OUT = WRITTEN + 1
"""Where the table's rows coming out of a MERGE's join are among them, when counted."""


@dataclass(frozen=True)
class Plan:
    """The query that computes the new version of a table for a row change.

    ``inner``: SQL expressions of the rows the select reads: every column of the
    table's rows and a MERGE's source rows, under the names the statement gives
    them, and the index of the clause applying to each row (``CLAUSE``).
    ``select``: SQL expressions of the table's columns (old values), the clause
    index and each clause's new values, computed only where its clause applies;
    ``values``: per clause, the value column of each table column it sets.
    """

    table: TempTable
    schema: StructType
    clauses: tuple[MergeClause, ...]
    select: tuple[str, ...]
    values: tuple[dict[int, str | None], ...]
    target: tuple[str, str]
    """The table's rows as SQL, and the name the statement's expressions give them."""
    source: tuple[str, str] | None
    """For a MERGE, the source's rows as SQL and their name; they are full outer joined
    with the table's rows on ``on``."""
    on: str
    inner: tuple[str, ...]
    cardinality: str | None
    """For a MERGE that must match each table row at most once: SQL that finds a row of
    the table matched by several source rows (Spark's ``MERGE_CARDINALITY_VIOLATION``),
    for when the write's own counts cannot tell (no observed metrics, or a table whose
    rows are not counted)."""

    @classmethod
    def of(cls, request: ChangeRows, table: TempTable) -> Plan:
        schema = StructType.fromJson(json.loads(table.schema_json))
        target_name = request.alias or table.name
        target = quote_identifier(target_name)
        table_rows = f"SELECT * FROM {quote_identifier(table.name)}"
        if isinstance(request, MergeInto):
            clauses = request.clauses
            source_name = request.source_alias or _SOURCE_QUERY
            source = quote_identifier(source_name)
            source_text = request.source
            if source_text.startswith("("):
                source_text = f"{source_text} AS {quote_identifier(_SOURCE_QUERY)}"
            numbered = (
                f"SELECT *, monotonically_increasing_id() AS {TARGET_ROW} FROM "
                f"{quote_identifier(table.name)}"
            )
            sourced = f"SELECT *, TRUE AS {SOURCE_ROW} FROM {source_text}"
            matched = [c for c in clauses if c.branch == MATCHED]
            check = bool(matched) and not (
                len(matched) == 1 and matched[0].action == DELETE and matched[0].condition is None
            )
            compared = None
            if check and _key(source_name) != _key(target_name):
                compared = compared_column(request.on, target_name, schema.names)
            present, absent = f"{target}.{TARGET_ROW} IS NOT NULL", f"{target}.{TARGET_ROW} IS NULL"
            target_row = f"{target}.{TARGET_ROW}"
            if compared is not None:
                # A row of the join holds a table row unless it is a source row no table
                # row matched, whose table columns are all NULL: the one the condition
                # compares is never NULL in a match. A mark on the table's rows would go
                # through the join's shuffle as one more column (4 % of a 2 M-row MERGE).
                column = f"{target}.{quote_identifier(compared)}"
                present = f"({source}.{SOURCE_ROW} IS NULL OR {column} IS NOT NULL)"
                absent = f"({source}.{SOURCE_ROW} IS NOT NULL AND {column} IS NULL)"
                target_row = f"CASE WHEN {present} THEN TRUE END"
            branches = {
                MATCHED: f"{present} AND {source}.{SOURCE_ROW} IS NOT NULL",
                NOT_MATCHED_BY_SOURCE: f"{source}.{SOURCE_ROW} IS NULL",
                NOT_MATCHED: absent,
            }
            extra = [f"{target_row} AS {TARGET_ROW}", f"{source}.{SOURCE_ROW} AS {SOURCE_ROW}"]
            cardinality = (
                f"SELECT 1 FROM ({numbered}) AS {target} JOIN ({sourced}) AS {source} ON "
                f"({request.on}) GROUP BY {target}.{TARGET_ROW} HAVING count(1) > 1 LIMIT 1"
                if check
                else None
            )
            # Where the cardinality is checked, a row of the table needs only a mark, not a
            # number: a BOOLEAN goes through the join's shuffle instead of a BIGINT; and none
            # where the condition compares a column of the table.
            marked = (
                f"SELECT *, TRUE AS {TARGET_ROW} FROM {quote_identifier(table.name)}"
                if compared is None
                else table_rows
            )
            rows = (marked if check else numbered, target_name)
            joined, on = (sourced, source_name), request.on
        else:
            source = ""
            clauses = (_only_clause(request),)
            branches = {EVERY_ROW: "TRUE"}
            extra, cardinality = [], None
            rows, joined, on = (table_rows, target_name), None, ""
        names = {_key(f.name): i for i, f in enumerate(schema.fields)}
        values = tuple(
            _clause_values(request, clause, schema, names, target, source) for clause in clauses
        )
        select = [f"{target}.{quote_identifier(f.name)} AS {quote_identifier(f.name)}" for f in schema.fields]
        select += extra
        select.append(CLAUSE)
        for k in range(len(clauses)):
            for i, expression in values[k].items():
                if expression is not None:
                    select.append(f"CASE WHEN {CLAUSE} = {k} THEN ({expression}) END AS {_VALUE.format(k, i)}")
        # The clause index is computed once, under the select: a value of clause k computed
        # where the conditions choosing the clause held took them into each value's code
        # again (a 2 M-row MERGE's query took 1.07x the same change by hand with its counts;
        # 1.00x with the index computed once). The rows keep the statement's names for them.
        inner = [f"{target}.*", *([f"{source}.*"] if source else [])]
        inner.append(f"{_clause_index(clauses, branches)} AS {CLAUSE}")
        return cls(
            table,
            schema,
            clauses,
            tuple(select),
            tuple(
                {i: None if e is None else _VALUE.format(k, i) for i, e in v.items()}
                for k, v in enumerate(values)
            ),
            rows,
            joined,
            on,
            tuple(inner),
            cardinality,
        )

    def _rows(self) -> spark_proto.Relation:
        """The rows the select reads: the table's, full outer joined with a MERGE's source."""
        with deep_messages():
            table = _aliased(*self.target)
            if self.source is None:
                return table
            relation = spark_proto.Relation()
            relation.join.left.CopyFrom(table)
            relation.join.right.CopyFrom(_aliased(*self.source))
            relation.join.join_type = spark_proto.Join.JoinType.JOIN_TYPE_FULL_OUTER
            relation.join.join_condition.expression_string.expression = self.on
            return relation

    def _typed(self) -> spark_proto.Relation:
        """The select, its values cast to their columns' types, a MERGE's repeated matches
        marked where it may have them."""
        fields = list(nullable_columns(self.schema).fields)
        if any(c.branch != EVERY_ROW for c in self.clauses):
            numbered = LongType() if self.cardinality is None else BooleanType()
            fields += [StructField(TARGET_ROW, numbered), StructField(SOURCE_ROW, BooleanType())]
        fields.append(StructField(CLAUSE, IntegerType()))
        for v in self.values:
            for i, column in v.items():
                if column is not None:
                    fields.append(StructField(column, fields[i].dataType))
        chosen = spark_proto.Relation()
        with deep_messages():
            chosen.project.input.CopyFrom(self._rows())
        for expression in self.inner:
            chosen.project.expressions.add().expression_string.expression = expression
        selected = spark_proto.Relation()
        with deep_messages():
            selected.project.input.CopyFrom(chosen)
        for expression in self.select:
            selected.project.expressions.add().expression_string.expression = expression
        relation = spark_proto.Relation()
        with deep_messages():
            relation.to_schema.input.CopyFrom(selected)
        relation.to_schema.schema.CopyFrom(pyspark_types_to_proto_types(StructType(fields)))
        if all(c.branch == EVERY_ROW for c in self.clauses) or self.cardinality is not None:
            return relation
        matches = spark_proto.Relation()
        with deep_messages():
            matches.project.input.CopyFrom(relation)
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
        # count(CASE ... THEN 1 END), not count_if: Spark evaluates count_if's condition
        # through a common expression of its own, about 5 % of a whole UPDATE's write.
        def count(condition: str, name: str) -> str:
            return f"count(CASE WHEN {condition} THEN 1 END) AS {name}"

        counts = []
        for action in COUNTED:
            found = [str(k) for k, c in enumerate(self.clauses) if c.action == action]
            counts.append(count(f"{CLAUSE} IN ({', '.join(found)})" if found else "FALSE", action))
        counts.append(count(self._kept, "written") if self._drops else "count(1) AS written")
        if self.cardinality is not None:
            counts.append(f"count({TARGET_ROW}) AS targets_out")
        return counts

    @property
    def _drops(self) -> bool:
        """Whether some rows of the query are not written: deleted, or a MERGE's source
        rows no clause inserts, or a table row's repeated matches."""
        return any(c.action == DELETE or c.branch != EVERY_ROW for c in self.clauses)

    @property
    def _kept(self) -> str:
        dropped = [str(k) for k, c in enumerate(self.clauses) if c.action == DELETE]
        dropped += [str(SKIP), str(REPEATED)]
        return f"NOT ({CLAUSE} IN ({', '.join(dropped)}))"

    @property
    def deletes_only(self) -> bool:
        """Whether this is a DELETE or TRUNCATE of a table whose rows are counted: the rows
        it deletes are the rows before less the rows written, which the write counts on its
        written rows, so nothing is observed in the query."""
        return self.table.rows is not None and all(
            c.branch == EVERY_ROW and c.action == DELETE for c in self.clauses
        )

    def relation(self, metric: str) -> spark_proto.Relation:
        """The table's new rows; unless the plan ``deletes_only``, with the observation
        ``metric`` counting the changes, the rows written (value ``WRITTEN``) and, when the
        MERGE's cardinality is checked, the table's rows coming out of the join (value
        ``TARGETS_OUT``: a row matched by several source rows comes out once per match, so
        more than the table holds exactly when one was matched twice).

        The observation sees the new values beside each row's clause index, and only a
        filter and the choice of the table's columns follow it: an observation splits the
        query's generated code in two, and each value computed after it is computed from a
        row built again (an UPDATE of 2 M rows took 1.19x the plain write with the counts
        under its new values, 1.06x with them over)."""
        new = spark_proto.Relation()
        with deep_messages():
            new.project.input.CopyFrom(self._typed())
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
        new.project.expressions.add().expression_string.expression = CLAUSE
        if self.cardinality is not None:
            new.project.expressions.add().expression_string.expression = TARGET_ROW
        rows = new
        if not self.deletes_only:
            rows = spark_proto.Relation()
            with deep_messages():
                rows.collect_metrics.input.CopyFrom(new)
            rows.collect_metrics.name = metric
            for expression in self._metrics():
                rows.collect_metrics.metrics.add().expression_string.expression = expression
        if self._drops:
            kept = spark_proto.Relation()
            with deep_messages():
                kept.filter.input.CopyFrom(rows)
            kept.filter.condition.expression_string.expression = self._kept
            rows = kept
        table = spark_proto.Relation()
        with deep_messages():
            table.project.input.CopyFrom(rows)
        for field in self.schema.fields:
            table.project.expressions.add().expression_string.expression = quote_identifier(
                field.name
            )
        return table

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


def _condition(clause: MergeClause) -> str:
    return "TRUE" if clause.condition is None else f"({clause.condition})"


def _aliased(sql: str, alias: str) -> spark_proto.Relation:
    relation = spark_proto.Relation()
    relation.subquery_alias.input.sql.query = sql
    relation.subquery_alias.alias = alias
    return relation
