"""Filters straight above a scan say which files it may skip: the gateway's partition pruning.

Spark's own filter pushdown for Python data sources cannot be used: Spark
4.1 to 4.3 keep the reader one query's filters narrowed on the data source
object that the query's analysed plan shares with the DataFrame, its
plan-cache entry and any view over it, and hand that reader to the next
query, which then silently reads only the first query's files (see
``spark_source``). So the gateway reads the ``Filter`` conditions of a
request itself: where a chain of ``Filter`` nodes (and projections that only
pick columns by name) stands on a ``Scan``, what the conditions say of
columns compared with literals becomes the scan's ``file_filter``, and the
data source skips the files whose partition and file columns rule them
out. The filter is part of that query's own plan, so nothing is shared
between queries; Spark still evaluates each condition on every row read.

Only what is certain is read: comparisons (``=``, ``<=>``, ``<``, ``<=``,
``>``, ``>=``, ``!=``), ``IN``, ``BETWEEN``, ``IS [NOT] NULL``, prefix
``LIKE`` and ``startsWith``/``endsWith``/``contains`` of an unqualified
column with literals, under ``AND``, ``OR`` and ``NOT``, written as
DataFrame expressions or as SQL expression text. Anything else (functions,
casts, typed or escaped literals, qualified names, double-quoted text,
whose meaning depends on settings) is unknown, which never rules a file
out. A client's own ``file_filter`` is always replaced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, cast

import sqlglot
from google.protobuf.message import Message
from pyspark.sql.connect import proto as spark_proto
from sqlglot import exp

from connect_plugin import proto
from connect_plugin.scanning import FileFilter, PartitionFilter, predicates
from connect_plugin.server.scans.cached_scans import is_cached
from connect_plugin.server.statements.handlers import CachedScans
from connect_plugin.server.transport.plans import plan_nodes, type_name_of, unpack

MAX_CONDITION_CHARS = 4096
"""SQL expression text read for pruning per request, at most: a request's conditions are
read on the event loop, so a request full of long texts is read no further than this."""

MAX_CHAIN = 64
"""Filters and projections between a filter and its scan, at most: each filter walks down
its chain, so a request of thousands of stacked filters costs no more than this each (the
filters nearest the scan still prune it)."""

_SCAN_TYPE = proto.Scan.DESCRIPTOR.full_name
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_QUOTED_NAME = re.compile(r"^`((?:[^`]|``)+)`$")
_PLAIN_NUMBER = re.compile(r"^(\d+\.?\d*|\.\d+)$")

_COMPARISONS = {"==": "eq", "<=>": "eq_null_safe", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_MIRRORED = {"eq": "eq", "eq_null_safe": "eq_null_safe", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
_TEXT_FUNCTIONS = {"startswith": "starts_with", "endswith": "ends_with", "contains": "contains"}

_UNKNOWN = object()
"""A literal this module cannot read."""


def push_file_filters(tree: Message, cached: CachedScans = ()) -> bool:
    """Give every scan in ``tree`` the file filter of the Filters straight above it.

    Returns whether any scan changed. Outer filters are met before inner
    ones, so a scan takes the filter of its whole chain. A scan in a plan
    the client cached gets none, so that the query finds Spark's cache.
    """
    relations = [cast(spark_proto.Relation, r) for r in plan_nodes(tree, spark_proto.Relation)]
    reader = Conditions()
    changed = False
    for scan in relations:
        if _is_scan(scan):
            changed |= _set_file_filter(scan, "")
    for relation in relations:
        if not relation.HasField("filter"):
            continue
        chain = _chain(relation)
        if chain is None:
            continue
        scan, conditions, plan_ids = chain
        message = unpack(scan.extension, proto.Scan)
        if message is None or message.file_filter or is_cached(message, cached):
            continue
        reader.plan_ids = plan_ids
        found = predicates.all_of([reader.read(c) for c in conditions])
        if found is not None:
            text = json.dumps(predicates.to_json(found), sort_keys=True, separators=(",", ":"))
            changed |= _set_file_filter(scan, text)
    return changed


def _is_scan(relation: spark_proto.Relation) -> bool:
    return relation.HasField("extension") and type_name_of(relation.extension) == _SCAN_TYPE


def _set_file_filter(scan: spark_proto.Relation, text: str) -> bool:
    message = unpack(scan.extension, proto.Scan)
    if message is None or message.file_filter == text:
        return False
    message.file_filter = text
    scan.extension.Pack(message)
    return True


def _chain(
    top: spark_proto.Relation,
) -> tuple[spark_proto.Relation, list[spark_proto.Expression], frozenset[int]] | None:
    """The scan under a chain of filters and name-only projections, their conditions, and
    the plan ids of the chain's nodes (which a column reference may name)."""
    conditions: list[spark_proto.Expression] = []
    plan_ids: set[int] = set()
    node = top
    for _ in range(MAX_CHAIN + 1):
        if node.HasField("common") and node.common.HasField("plan_id"):
            plan_ids.add(node.common.plan_id)
        if node.HasField("filter"):
            conditions.append(node.filter.condition)
            node = node.filter.input
        elif node.HasField("project") and all(_picks(e) for e in node.project.expressions):
            node = node.project.input
        elif _is_scan(node):
            return node, conditions, frozenset(plan_ids)
        else:
            return None
    return None


def _picks(expression: spark_proto.Expression) -> bool:
    """Whether a projected expression keeps a column under its own name (a nested field,
    ``event.year``, is named ``year`` after it, which may be a folder column's name)."""
    if expression.HasField("unresolved_star"):
        return not expression.unresolved_star.unparsed_target
    return (
        expression.HasField("unresolved_attribute")
        and _identifier(expression.unresolved_attribute.unparsed_identifier) is not None
    )


class Conditions:
    """Reads the conditions of one request into file filters; None stands for a condition
    not known. ``plan_ids``: the plans a column reference may name (those of the chain)."""

    def __init__(self) -> None:
        self.plan_ids: frozenset[int] = frozenset()
        self._sql_left = MAX_CONDITION_CHARS

    def read(self, expression: spark_proto.Expression, negated: bool = False) -> FileFilter | None:
        """The filter of ``expression`` (of its NOT when ``negated``), None if nothing is
        known."""
        kind = expression.WhichOneof("expr_type")
        if kind == "expression_string":
            text = expression.expression_string.expression
            if len(text) > self._sql_left:
                return None
            self._sql_left -= len(text)
            return read_sql(text, negated)
        if kind != "unresolved_function":
            return None
        function = expression.unresolved_function
        if function.is_distinct or function.is_user_defined_function:
            return None
        name = function.function_name.lower()
        arguments = list(function.arguments)
        if name in ("and", "or") and len(arguments) == 2:
            parts = [self.read(a, negated) for a in arguments]
            return predicates.joined(name == "and", negated, parts)
        if name == "not" and len(arguments) == 1:
            return self.read(arguments[0], not negated)
        return predicates.negated_if(negated, self._comparison(name, arguments))

    def _comparison(
        self, name: str, arguments: list[spark_proto.Expression]
    ) -> FileFilter | None:
        if name in ("isnull", "isnotnull") and len(arguments) == 1:
            column = self._column(arguments[0])
            op = "is_null" if name == "isnull" else "is_not_null"
            return None if column is None else PartitionFilter(op, column)
        if name == "in" and len(arguments) >= 2:
            column = self._column(arguments[0])
            values = [_proto_literal(a) for a in arguments[1:]]
            if column is None or any(v is _UNKNOWN for v in values):
                return None
            return PartitionFilter("in", column, tuple(values))
        if name == "like" and len(arguments) == 2:
            return _prefix(self._column(arguments[0]), _proto_literal(arguments[1]))
        compared = _COMPARISONS.get(name) or _TEXT_FUNCTIONS.get(name)
        if compared is None or len(arguments) != 2:
            return None
        return _comparison(compared, arguments, self._column, _proto_literal)

    def _column(self, expression: spark_proto.Expression) -> str | None:
        if not expression.HasField("unresolved_attribute"):
            return None
        attribute = expression.unresolved_attribute
        if attribute.is_metadata_column:
            return None
        if attribute.HasField("plan_id") and attribute.plan_id not in self.plan_ids:
            return None
        return _identifier(attribute.unparsed_identifier)


def _comparison(
    op: str,
    arguments: Sequence[Any],
    column_of: Callable[[Any], str | None],
    literal_of: Callable[[Any], Any],
) -> FileFilter | None:
    """``column op literal`` or ``literal op column`` (mirrored), else unknown."""
    left, right = arguments
    column, value = column_of(left), literal_of(right)
    if column is None and op in _MIRRORED:
        column, value, op = column_of(right), literal_of(left), _MIRRORED[op]
    if column is None or value is _UNKNOWN:
        return None
    return PartitionFilter(op, column, value)


def _prefix(column: str | None, pattern: Any) -> FileFilter | None:
    """``column LIKE 'text%'``, with no other wildcard or escape, as a prefix test."""
    if column is None or not isinstance(pattern, str) or not pattern.endswith("%"):
        return None
    prefix = pattern[:-1]
    if any(special in prefix for special in ("%", "_", "\\")):
        return None
    return PartitionFilter("starts_with", column, prefix)


def _identifier(text: str) -> str | None:
    if _PLAIN_NAME.match(text):
        return text
    quoted = _QUOTED_NAME.match(text)
    return quoted.group(1).replace("``", "`") if quoted else None


def _proto_literal(expression: spark_proto.Expression) -> Any:
    if not expression.HasField("literal"):
        return _UNKNOWN
    literal = expression.literal
    kind = literal.WhichOneof("literal_type")
    if kind == "null":
        return None
    if kind in ("byte", "short", "integer", "long", "float", "double", "string"):
        value = getattr(literal, kind)
    elif kind == "decimal":
        try:
            value = Decimal(literal.decimal.value)
        except InvalidOperation:
            return _UNKNOWN
    else:
        return _UNKNOWN
    try:
        return predicates.literal(value)
    except ValueError:
        return _UNKNOWN


def read_sql(text: str, negated: bool = False) -> FileFilter | None:
    """A SQL condition (``df.where("month = 3")``) as a file filter (of its NOT when
    ``negated``), None if nothing is known.

    Text with a double quote (a string or an identifier, as a setting
    decides) or a backslash (an escape, or not, as another decides) is not
    read at all.
    """
    if len(text) > MAX_CONDITION_CHARS or '"' in text or "\\" in text:
        return None
    try:
        tree = cast(exp.Expression, sqlglot.parse_one(text, read="spark"))
    except sqlglot.errors.SqlglotError:
        return None
    return _read_sql(tree, negated)


_SQL_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "eq",
    exp.NullSafeEQ: "eq_null_safe",
    exp.LT: "lt",
    exp.LTE: "le",
    exp.GT: "gt",
    exp.GTE: "ge",
}


def _read_sql(node: exp.Expression, negated: bool) -> FileFilter | None:
    if isinstance(node, exp.Paren):
        return _read_sql(node.this, negated)
    if isinstance(node, exp.And | exp.Or):
        parts = [_read_sql(node.this, negated), _read_sql(node.expression, negated)]
        return predicates.joined(isinstance(node, exp.And), negated, parts)
    if isinstance(node, exp.Not):
        return _read_sql(node.this, not negated)
    if isinstance(node, exp.NEQ):
        equal = _comparison("eq", [node.this, node.expression], _sql_column, _sql_literal)
        return predicates.negated_if(not negated, equal)
    return predicates.negated_if(negated, _sql_comparison(node))


def _sql_comparison(node: exp.Expression) -> FileFilter | None:
    op = _SQL_COMPARISONS.get(type(node))
    if op is not None:
        return _comparison(op, [node.this, node.expression], _sql_column, _sql_literal)
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        column = _sql_column(node.this)
        return None if column is None else PartitionFilter("is_null", column)
    if isinstance(node, exp.In) and not node.args.get("query") and not node.args.get("unnest"):
        column = _sql_column(node.this)
        values = [_sql_literal(e) for e in node.expressions]
        if column is None or not values or any(v is _UNKNOWN for v in values):
            return None
        return PartitionFilter("in", column, tuple(values))
    if isinstance(node, exp.Between) and not node.args.get("symmetric"):
        low = _comparison("ge", [node.this, node.args["low"]], _sql_column, _sql_literal)
        high = _comparison("le", [node.this, node.args["high"]], _sql_column, _sql_literal)
        return predicates.all_of([low, high]) if low is not None and high is not None else None
    if isinstance(node, exp.Like) and not node.args.get("escape"):
        return _prefix(_sql_column(node.this), _sql_literal(node.expression))
    return None


def _sql_column(node: exp.Expression) -> str | None:
    if not isinstance(node, exp.Column) or node.table or node.db or node.catalog:
        return None
    identifier = node.this
    if not isinstance(identifier, exp.Identifier):
        return None
    name: str = identifier.this
    return name


def _sql_literal(node: exp.Expression) -> Any:
    negative = False
    if isinstance(node, exp.Neg):
        negative, node = True, node.this
    if isinstance(node, exp.Null) and not negative:
        return None
    if not isinstance(node, exp.Literal):
        return _UNKNOWN
    text = node.this
    if node.is_string:
        return _UNKNOWN if negative else text
    if not _PLAIN_NUMBER.match(text):
        return _UNKNOWN
    number: int | Decimal = Decimal(text) if "." in text else int(text)
    return -number if negative else number
