"""Row counts over a scan send no rows to Spark: the count rewrite.

A row count (``df.count()``: an ungrouped ``Aggregate`` of ``count(1)`` or
``count(*)`` straight over a scan) is rewritten into a scan that yields, per
file, the number of rows reading that file gives, and a sum of those. The
scan keeps its columns: a count must fail where reading fails and drop what
reading drops (bad records, under every policy), so each file is read as a
query would read it, only its rows never leave the Python worker. Where the
number is certain without decoding (parquet footers, a projection of no data
columns), the scan counts without reading values (``ScanReader.count_file``).
A scan with ``on_error="reject"`` is left alone: its reading fills the
rejects table.
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf.message import Message
from pyspark.sql.connect import proto as spark_proto

from connect_plugin import proto
from connect_plugin.scanning.spark import COUNT_COLUMN
from connect_plugin.server.model.spark_sql import quote_identifier
from connect_plugin.server.scans.cached_scans import is_cached
from connect_plugin.server.statements.handlers import CachedScans
from connect_plugin.server.transport.plans import type_name_of, unpack, walk_relations

_SCAN_TYPE = proto.Scan.DESCRIPTOR.full_name
_UNGROUPED = (
    spark_proto.Aggregate.GroupType.GROUP_TYPE_UNSPECIFIED,
    spark_proto.Aggregate.GroupType.GROUP_TYPE_GROUPBY,
)


_REJECTING = proto.BadRecordPolicy.BAD_RECORD_POLICY_REJECT


def push_row_counts(request: Message, cached: CachedScans = ()) -> bool:
    """Make scans under a bare row count yield per-file row counts, and sum them.

    Qualifies: an ungrouped ``Aggregate`` (``df.count()``, ``df.agg(...)``)
    or a ``Project`` (``df.select(F.count("*"))``) straight over a ``Scan``,
    whose every expression is ``count(1)`` or ``count(*)``, aliased or not.
    The scan then yields one row per file with the number of rows reading it
    gives, and each expression becomes the sum of those, as a count has it
    (``coalesce(sum(rows), 0)``, a bigint that is never null). A scan in a
    plan the client cached is left alone, so the count finds Spark's cache.
    """
    changed = False
    for relation in walk_relations(request):
        found = _counted_scan(relation)
        if found is None:
            continue
        counted, expressions = found
        message = unpack(counted.extension, proto.Scan)
        if message is None or message.on_error == _REJECTING or message.count_rows:
            continue
        if is_cached(message, cached):
            continue
        names = [_count_name(e) for e in expressions]
        if not all(names):
            continue
        message.count_rows = True
        for expression, name in zip(expressions, names, strict=True):
            expression.CopyFrom(_sum_of_counts(name or ""))
        counted.extension.Pack(message)
        changed = True
    return changed


def _counted_scan(
    relation: spark_proto.Relation,
) -> tuple[spark_proto.Relation, Sequence[spark_proto.Expression]] | None:
    """The scan ``relation`` only counts the rows of, and the counting expressions."""
    if relation.HasField("aggregate"):
        aggregate = relation.aggregate
        if aggregate.grouping_expressions or aggregate.group_type not in _UNGROUPED:
            return None
        child, expressions = aggregate.input, aggregate.aggregate_expressions
    elif relation.HasField("project"):
        child, expressions = relation.project.input, relation.project.expressions
    else:
        return None
    if not child.HasField("extension") or type_name_of(child.extension) != _SCAN_TYPE:
        return None
    if not expressions or not all(_counts_rows(e) for e in expressions):
        return None
    return child, expressions


def _counts_rows(expression: spark_proto.Expression) -> bool:
    if expression.HasField("alias"):
        return _counts_rows(expression.alias.expr)
    if not expression.HasField("unresolved_function"):
        return False
    function = expression.unresolved_function
    if function.function_name.lower() != "count" or function.is_distinct:
        return False
    return all(a.HasField("literal") or a.HasField("unresolved_star") for a in function.arguments)


def _count_name(expression: spark_proto.Expression) -> str | None:
    """The output name of ``count(1)``, ``count(*)`` or an alias of one; None for other counts."""
    if expression.HasField("alias"):
        inner = expression.alias.expr
        named = len(expression.alias.name) == 1 and not expression.alias.HasField("metadata")
        return expression.alias.name[0] if named and _count_name(inner) else None
    arguments = expression.unresolved_function.arguments
    if len(arguments) != 1:
        return None
    (argument,) = arguments
    if argument.HasField("unresolved_star") and not argument.unresolved_star.unparsed_target:
        return "count(1)"
    literal = argument.literal
    one = literal.WhichOneof("literal_type") in ("integer", "long") and (
        literal.integer == 1 or literal.long == 1
    )
    return "count(1)" if argument.HasField("literal") and one else None


def _sum_of_counts(name: str) -> spark_proto.Expression:
    """``coalesce(sum(rows), 0L) AS name``: a count's value, type and nullability."""
    column = spark_proto.Expression()
    column.unresolved_attribute.unparsed_identifier = quote_identifier(COUNT_COLUMN)
    total = spark_proto.Expression()
    total.unresolved_function.function_name = "sum"
    total.unresolved_function.arguments.append(column)
    zero = spark_proto.Expression()
    zero.literal.long = 0
    coalesced = spark_proto.Expression()
    coalesced.unresolved_function.function_name = "coalesce"
    coalesced.unresolved_function.arguments.extend([total, zero])
    named = spark_proto.Expression()
    named.alias.expr.CopyFrom(coalesced)
    named.alias.name.append(name)
    return named
