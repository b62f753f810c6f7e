"""Zeros of both signs in one orc float or double column, refused before they are written.

Spark reads orc with ORC's Java reader, which marks a batch of a float or
double column with no NULL in it as repeating when every value is ``==``
the first, and then gives every row the first one's value: -0.0 ``==`` 0.0,
so a run of zeros of both signs (no NULL, no other value among them) reads
back with the sign of its first zero. The files hold the right values (other
readers give them back exactly); a lone -0.0 reads back right, and a batch
never spans two files, so zeros written by different writes do too. Which
rows Spark stores next to each other, and where the reader's batches start,
cannot be known before the write, so a write that gives one float or double
of a column (a struct's field, an array's elements, a map's keys or values:
orc stores each apart) both a -0.0 and a 0.0 is refused, as ``value_checks``
refuses values, after one aggregate over the rows it would write (the query
runs twice, for orc tables with such columns only). A query that fails in
that aggregate is left to fail in the write, with the write's own error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DoubleType,
    FloatType,
    MapType,
    StructField,
    StructType,
    UserDefinedType,
)

from connect_plugin.errors import UpstreamFailed, ValueNotHeld
from connect_plugin.server.model.spark_sql import quote_identifier
from connect_plugin.server.tables.lossless import holders
from connect_plugin.server.transport.plans import deep_messages
from connect_plugin.server.transport.upstream import UpstreamSession

Within = Callable[[Callable[[str], str]], str]
"""Given a test (Spark SQL) over one float or double, the predicate over a column's value that
some float or double at one place inside it passes the test."""

_SIGNS = ("CAST({} AS STRING) = '-0.0'", "CAST({} AS STRING) = '0.0'")
"""Tests of a float or double for -0.0 and for 0.0 (Java's shortest form keeps the sign)."""
_HOLDS = "a -0.0 and a 0.0 in one write (orc may read such zeros back with one sign)"
_OTHERS = ("parquet", "json", "csv")


def zero_columns(
    fmt: str, written: StructType, partition_columns: Sequence[str]
) -> list[StructField]:
    """The data columns of an orc table with a float or double in them (none for others)."""
    if fmt != "orc":
        return []
    partitions = {c.lower() for c in partition_columns}
    return [
        f for f in written.fields if f.name.lower() not in partitions and places("x", f.dataType)
    ]


async def refuse_zeros_of_both_signs(
    upstream: UpstreamSession,
    relation: spark_proto.Relation,
    name: str,
    columns: Sequence[StructField],
    values: Callable[[StructField], str] | None = None,
) -> None:
    """Raise ``ValueNotHeld`` when ``relation``'s rows give one float or double place of
    ``columns`` both a -0.0 and a 0.0.

    ``values`` gives the expression of a column's value in ``relation`` as it
    will be stored (its name, by default).
    """
    if not columns:
        return
    with deep_messages():
        probe = spark_proto.Relation()
        probe.aggregate.input.CopyFrom(relation)
    probe.aggregate.group_type = spark_proto.Aggregate.GroupType.GROUP_TYPE_GROUPBY
    tested: list[StructField] = []
    for field in columns:
        value = values(field) if values is not None else quote_identifier(field.name)
        for within in places(value, field.dataType):
            at = len(tested)
            tested.append(field)
            for sign, test in enumerate(_SIGNS):
                expression = probe.aggregate.aggregate_expressions.add().expression_string
                expression.expression = (
                    f"bool_or(coalesce({within(test.format)}, false)) AS z{at}_{sign}"
                )
    try:
        (row,) = await upstream.rows(probe)
    except UpstreamFailed:
        return
    for at, field in enumerate(tested):
        if row[f"z{at}_0"] and row[f"z{at}_1"]:
            others = ", ".join(f for f in holders(field.dataType) if f in _OTHERS)
            raise ValueNotHeld(
                f"Temporary table [{name}]: column [{field.name}] of type "
                f"{field.dataType.simpleString()} holds {_HOLDS}, which orc cannot hold "
                f"exactly; nothing was written (use {others}, or write such zeros in "
                "separate statements)"
            )


def places(expression: str, data_type: DataType, depth: int = 0) -> list[Within]:
    """Each place of a float or double inside a value of ``data_type`` (orc's columns)."""
    if isinstance(data_type, UserDefinedType):
        return places(expression, data_type.sqlType(), depth)
    if isinstance(data_type, (FloatType, DoubleType)):
        return [lambda test: test(expression)]
    variable = f"__connect_plugin_z{depth}"
    if isinstance(data_type, ArrayType):
        return [
            _exists(expression, variable, inner)
            for inner in places(variable, data_type.elementType, depth + 1)
        ]
    if isinstance(data_type, MapType):
        sides = (("map_keys", data_type.keyType), ("map_values", data_type.valueType))
        return [
            _exists(f"{side}({expression})", variable, inner)
            for side, part_type in sides
            for inner in places(variable, part_type, depth + 1)
        ]
    if isinstance(data_type, StructType):
        return [
            inner
            for field in data_type.fields
            for inner in places(
                f"{expression}.{quote_identifier(field.name)}", field.dataType, depth
            )
        ]
    return []


def _exists(expression: str, variable: str, inner: Within) -> Within:
    return lambda test: f"exists({expression}, {variable} -> {inner(test)})"
