"""The new rows of a temp table that an overwrite replaces, as Spark's overwrites define them.

An overwrite of a temp table is a rewrite (``rewrites``): the
table's new rows are written into a new folder and its view moves to them.
Which old rows stay depends on the overwrite:

- ``INSERT OVERWRITE`` and ``insertInto(overwrite=True)`` replace every row,
  unless the session's ``spark.sql.sources.partitionOverwriteMode`` is
  ``dynamic`` and the table is partitioned: then, as Spark's own file tables
  do, only the partitions the new rows fall in are replaced and the others
  stay;
- ``writeTo(name).overwrite(condition)`` replaces the rows the condition
  holds for (a NULL keeps the row);
- ``saveAsTable(name, mode="overwrite")`` replaces every row.
"""

from __future__ import annotations

import json

from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.types import DoubleType, FloatType, StructField, StructType

from connect_plugin.server.model.spark_sql import literal, quote_identifier
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.table_files.views import files_relation
from connect_plugin.server.transport.plans import deep_messages
from connect_plugin.server.transport.upstream import UpstreamSession

PARTITION_OVERWRITE_MODE = "spark.sql.sources.partitionOverwriteMode"
_NEW = "__connect_plugin_new"
_REPLACED = "__connect_plugin_replaced"


async def replaces_partitions(upstream: UpstreamSession, table: TempTable) -> bool:
    """Whether an INSERT OVERWRITE of ``table`` replaces only the partitions it writes."""
    if not table.partition_columns:
        return False
    mode = (await upstream.config([PARTITION_OVERWRITE_MODE])).get(PARTITION_OVERWRITE_MODE)
    return (mode or "").strip().lower() == "dynamic"


def with_partitions_replaced(table: TempTable, rows: spark_proto.Relation) -> spark_proto.Relation:
    """``rows`` (in the table's column order), and the table's rows in partitions none of
    them falls in.

    The partitions come from the rows as they are written (one evaluation of
    ``rows``, so a query with ``rand()`` replaces exactly the partitions it
    fills); NULL is a partition of its own, as in Spark's files. A partition
    is a folder named by its values as text, so ``-0.0`` and ``0.0`` of a
    FLOAT or DOUBLE column are two partitions, which Spark's grouping (that
    takes them as one value) would merge: such a column is compared as text.
    """
    schema = StructType.fromJson(json.loads(table.schema_json))
    names = schema.names
    wanted = {c.lower() for c in table.partition_columns}
    partitions = ", ".join(_partition_key(f) for f in schema.fields if f.name.lower() in wanted)
    both = _union_all(_marked(files_relation(table), 0), _marked(rows, 1))
    replaced = spark_proto.Relation()
    with deep_messages():
        replaced.project.input.CopyFrom(both)
    expressions = [*(quote_identifier(n) for n in names), _NEW]
    expressions.append(f"max({_NEW}) OVER (PARTITION BY {partitions}) AS {_REPLACED}")
    for expression in expressions:
        replaced.project.expressions.add().expression_string.expression = expression
    kept = spark_proto.Relation()
    with deep_messages():
        kept.filter.input.CopyFrom(replaced)
    kept.filter.condition.expression_string.expression = f"{_NEW} = 1 OR {_REPLACED} = 0"
    return _columns(kept, names)


def with_rows_replaced(
    table: TempTable, condition: spark_proto.Expression, rows: spark_proto.Relation
) -> spark_proto.Relation:
    """``rows``, and the table's rows ``condition`` does not hold for (false or NULL)."""
    kept = spark_proto.Relation()
    kept.filter.input.CopyFrom(files_relation(table))
    keep = kept.filter.condition.unresolved_function
    keep.function_name = "not"
    held = keep.arguments.add().unresolved_function
    held.function_name = "coalesce"
    with deep_messages():
        held.arguments.add().CopyFrom(condition)
    held.arguments.append(literal(False))
    return _union_all(kept, rows)


def _partition_key(field: StructField) -> str:
    quoted = quote_identifier(field.name)
    if isinstance(field.dataType, FloatType | DoubleType):
        return f"CAST({quoted} AS STRING)"
    return quoted


def _marked(relation: spark_proto.Relation, mark: int) -> spark_proto.Relation:
    marked = spark_proto.Relation()
    with deep_messages():
        marked.project.input.CopyFrom(relation)
    marked.project.expressions.add().unresolved_star.SetInParent()
    marked.project.expressions.add().expression_string.expression = f"{mark} AS {_NEW}"
    return marked


def _columns(relation: spark_proto.Relation, names: list[str]) -> spark_proto.Relation:
    chosen = spark_proto.Relation()
    with deep_messages():
        chosen.project.input.CopyFrom(relation)
    for name in names:
        chosen.project.expressions.add().expression_string.expression = quote_identifier(name)
    return chosen


def _union_all(left: spark_proto.Relation, right: spark_proto.Relation) -> spark_proto.Relation:
    both = spark_proto.Relation()
    with deep_messages():
        both.set_op.left_input.CopyFrom(left)
        both.set_op.right_input.CopyFrom(right)
    both.set_op.set_op_type = spark_proto.SetOperation.SetOpType.SET_OP_TYPE_UNION
    both.set_op.is_all = True
    return both
