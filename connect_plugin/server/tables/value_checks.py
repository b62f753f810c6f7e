"""Values a temp-table format cannot hold within a type it holds, refused as they are written.

A few values of held types would not read back as written, whatever the
options: text has no NULL and a line break ends its row; json and csv write
strings as UTF-8 text, so a string that is not valid UTF-8 (``CAST(X'FF' AS
STRING)``) would come back with U+FFFD in it, and Spark cannot read back
from their text a timestamp in the first 0.776 s of its range; orc moves
dates and timestamps in the days the Julian-to-Gregorian switch skipped
(1582-10-05 to -14), reads a timestamp between 1969-12-31 23:59:59.001 and
the epoch (UTC) back a second late (its Java reader takes the seconds of
such a value for 0 rather than -1), and cannot write the earliest dates and
timestamps Spark has (its calendar conversion overflows); a partition value
of ``''`` or ``__HIVE_DEFAULT_PARTITION__`` reads back NULL, one that is not
UTF-8 is changed by the folder name, and a NUL character cannot be in a
folder name at all.

Such values can only be seen once the query runs, so the write is given a
filter that raises an error naming the table, the column and what it holds
on the first such row: the job fails, Spark commits no file, and the caller
deletes the folder as it does for any failed write. The error's text leads
with its class (``ValueNotHeld``, or ``NotNullViolation`` for a column
declared NOT NULL), which the client gets instead of Spark's
``USER_RAISED_EXCEPTION``. The predicates are Spark
SQL over the value as it will be stored, nested values included.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.types import (
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    UserDefinedType,
)

from connect_plugin.errors import NotNullViolation, ValueNotHeld
from connect_plugin.server.model.spark_sql import literal, quote_identifier
from connect_plugin.server.tables.lossless import holders, kind
from connect_plugin.server.transport.plans import deep_messages

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_ORC_SKIPPED_DAYS = ("1582-10-05", "1582-10-14")
"""Dates orc moves by ten days (Spark writes orc in the Julian-Gregorian calendar)."""
_ORC_SKIPPED_MICROS = tuple(
    int((datetime.datetime(1582, 10, day, tzinfo=datetime.timezone.utc) - _EPOCH).total_seconds())
    * 1_000_000
    for day in (4, 16)
)
"""Timestamps near those days: orc moves the ones that fall on them in the server JVM's
time zone, so a day more on each side covers every zone."""
_NOT_UTF8 = "NOT is_valid_utf8({})"
_ORC_LATE_SECOND = (-999_000, -1)
"""Timestamps (microseconds since the epoch) orc reads back one second later: its Java
reader takes the seconds of 1969-12-31 23:59:59.001 to .999999 UTC for 0 instead of -1 (the
writer stores ``getTime() / 1000``, rounded toward zero; it is right from the file, as other
readers show). From -999999 to -999001 the millisecond part is 0 and they come back as
written."""
_ORC_EARLIEST_DAY = -2_147_439_564
"""-5877520-03-03, the earliest date Spark's orc writer converts to its calendar (an integer
overflow before it, in any time zone)."""
_ORC_EARLIEST_MICROS = -9_223_181_856_000_000_000
"""-290301-01-01 00:00:00 UTC: Spark's orc writer overflows (a long) converting timestamps
before about -290302-12-10 20:00 UTC, how long before depending on the server JVM's time
zone by a few minutes; three weeks more cover every zone."""
_INT96_LAST_MICROS = 9_012_505_233_654_775_807
"""287564-12-03 04:00:54.775807 UTC, the last timestamp Spark's INT96 writer converts: it adds
the Julian day of the epoch, in microseconds, to a long, which overflows past it (plain Spark
stores another timestamp, with no error)."""
_TEXT_EARLIEST_MICROS = -9_223_372_036_854_000_000
"""-290308-12-21 19:59:06 UTC: Spark writes earlier timestamps into json or csv text, but
reading one back overflows (its seconds in microseconds are below the range of a long)."""

Atomic = Callable[[str, DataType], str | None]
"""A predicate (Spark SQL) over a value of a flat type that is true when it cannot be held."""


@dataclass(frozen=True)
class Rule:
    """Values of one column that its table's format cannot hold."""

    column: str
    data_type: DataType
    predicate: Callable[[str], str]
    """The SQL predicate over the column's value given as an expression."""
    holds: str
    """What the refused values are, for the error."""
    refuser: str
    """What cannot hold them: the format, a partition folder name, or ``NOT_NULL``."""
    advice: str


NOT_NULL = "NOT NULL"
"""The refuser of NULL in a column declared NOT NULL."""


def rules(fmt: str, written: StructType, partition_columns: Sequence[str]) -> list[Rule]:
    """The value rules of a table's columns (none when every value of every column is held).

    A column the written schema says is not nullable was declared NOT NULL
    (the schema of a query's result is stored nullable): Spark's file tables
    read every column back nullable and never refuse a NULL, so the gateway
    does, as Databricks SQL and PostgreSQL do.
    """
    partitions = {c.lower() for c in partition_columns}
    found = []
    for field in written.fields:
        if not field.nullable:
            found.append(_not_null_rule(field.name, field.dataType))
        if field.name.lower() in partitions:
            found.extend(_partition_rules(field.name, field.dataType))
        elif fmt == "text":
            found.append(_text_rule(field.name, field.dataType))
        else:
            found.extend(_format_rules(fmt, field.name, field.dataType))
    return found


def int96_rules(
    written: StructType, partition_columns: Sequence[str], advice: str
) -> list[Rule]:
    """The rules of a parquet write whose timestamps Spark stores as INT96 (an INSERT, as
    the session says; its default): the timestamps INT96 cannot hold, in every data column."""
    partitions = {c.lower() for c in partition_columns}
    return [
        Rule(
            field.name,
            field.dataType,
            _everywhere(field.dataType, _int96_overflow),
            "a timestamp after 287564-12-03 04:00:54.775807 UTC (Spark's INT96 writer "
            "overflows past it)",
            "parquet written as INT96",
            advice,
        )
        for field in written.fields
        if field.name.lower() not in partitions
        and nested_predicate("x", field.dataType, _int96_overflow) is not None
    ]


def _int96_overflow(expression: str, data_type: DataType) -> str | None:
    if kind(data_type) != "timestamp":
        return None
    return f"unix_micros({expression}) > {_INT96_LAST_MICROS}"


def nullable_inside(data_type: DataType) -> DataType:
    """``data_type`` with every element, map value and struct field nullable.

    Inside a value, nullability only says how a query happened to type it
    (``array(id)`` holds no NULL, ``named_struct('x', id)`` neither), and
    Spark's own ``CREATE TABLE ... USING parquet AS SELECT`` stores such types
    nullable: a later statement may put NULL there. NOT NULL is a column's,
    and the value checks enforce it.
    """
    if isinstance(data_type, ArrayType):
        return ArrayType(nullable_inside(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(nullable_inside(data_type.keyType), nullable_inside(data_type.valueType), True)
    if isinstance(data_type, StructType):
        return StructType(
            [StructField(f.name, nullable_inside(f.dataType), True, f.metadata) for f in data_type]
        )
    return data_type


def nullable_columns(schema: StructType) -> StructType:
    """``schema`` with every column nullable, inside too: what a table's rows are cast to
    before they are written, the checks refusing NULL in a column declared NOT NULL."""
    return StructType(
        [StructField(f.name, nullable_inside(f.dataType), True, f.metadata) for f in schema]
    )


def _partition_rules(column: str, data_type: DataType) -> list[Rule]:
    if kind(data_type) != "string":
        return []
    return [
        Rule(
            column,
            data_type,
            lambda e: (
                f"{e} = '' OR {e} = '{HIVE_DEFAULT_PARTITION}' OR instr({e}, chr(0)) > 0 OR "
                + _NOT_UTF8.format(e)
            ),
            f"'', '{HIVE_DEFAULT_PARTITION}', a NUL character or a string that is not UTF-8",
            "a partition folder name",
            "such a value reads back as NULL or changed; keep the column as a data column, or "
            "partition by another one",
        )
    ]


def _not_null_rule(column: str, data_type: DataType) -> Rule:
    return Rule(
        column,
        data_type,
        lambda e: f"{e} IS NULL",
        "NULL",
        NOT_NULL,
        "give the column a value in every row, or declare it without NOT NULL",
    )


def _text_rule(column: str, data_type: DataType) -> Rule:
    return Rule(
        column,
        data_type,
        lambda e: f"{e} IS NULL OR instr({e}, chr(10)) > 0 OR instr({e}, chr(13)) > 0",
        "NULL or a line break",
        "text",
        "text keeps one line per row and has no NULL; use json, csv, parquet or orc",
    )


def _format_rules(fmt: str, column: str, data_type: DataType) -> list[Rule]:
    found = []
    for hazard in _HAZARDS:
        if fmt not in hazard.formats or nested_predicate("x", data_type, hazard.atomic) is None:
            continue
        others = ", ".join(f for f in holders(data_type) if f in hazard.held_by)
        found.append(
            Rule(
                column,
                data_type,
                _everywhere(data_type, hazard.atomic),
                hazard.holds,
                fmt,
                f"use {others}" if others else "cast it to another type",
            )
        )
    return found


def _everywhere(data_type: DataType, atomic: Atomic) -> Callable[[str], str]:
    """The predicate over a value of ``data_type`` that ``atomic`` holds for a value in it."""
    return lambda e: nested_predicate(e, data_type, atomic) or "false"


def _not_utf8(expression: str, data_type: DataType) -> str | None:
    return _NOT_UTF8.format(expression) if kind(data_type) == "string" else None


def _unreadable_from_text(expression: str, data_type: DataType) -> str | None:
    if kind(data_type) != "timestamp":
        return None
    return f"unix_micros({expression}) < {_TEXT_EARLIEST_MICROS}"


def _orc_calendar_switch(expression: str, data_type: DataType) -> str | None:
    if kind(data_type) == "date":
        low, high = _ORC_SKIPPED_DAYS
        return f"{expression} BETWEEN DATE'{low}' AND DATE'{high}'"
    if kind(data_type) == "timestamp":
        low_micros, high_micros = _ORC_SKIPPED_MICROS
        return f"unix_micros({expression}) BETWEEN {low_micros} AND {high_micros - 1}"
    return None


def _orc_late_second(expression: str, data_type: DataType) -> str | None:
    if kind(data_type) != "timestamp":
        return None
    low, high = _ORC_LATE_SECOND
    return f"unix_micros({expression}) BETWEEN {low} AND {high}"


def _orc_earliest_date(expression: str, data_type: DataType) -> str | None:
    if kind(data_type) != "date":
        return None
    return f"unix_date({expression}) < {_ORC_EARLIEST_DAY}"


def _orc_earliest_timestamp(expression: str, data_type: DataType) -> str | None:
    if kind(data_type) != "timestamp":
        return None
    return f"unix_micros({expression}) < {_ORC_EARLIEST_MICROS}"


@dataclass(frozen=True)
class _Hazard:
    """Values of flat types that some formats cannot hold."""

    atomic: Atomic
    holds: str
    formats: tuple[str, ...]
    """The formats that cannot hold them."""
    held_by: tuple[str, ...]
    """The formats that hold them (where they hold the column's type), for the advice."""


_HAZARDS = (
    _Hazard(_not_utf8, "a string that is not UTF-8", ("json", "csv"), ("parquet", "orc")),
    _Hazard(
        _unreadable_from_text,
        "a timestamp before -290308-12-21 19:59:06 UTC (Spark cannot read it back from text)",
        ("json", "csv"),
        ("parquet",),
    ),
    _Hazard(
        _orc_calendar_switch,
        f"a date or timestamp in the days {_ORC_SKIPPED_DAYS[0]} to {_ORC_SKIPPED_DAYS[1]} "
        "(orc moves them by ten days)",
        ("orc",),
        ("parquet", "json", "csv"),
    ),
    _Hazard(
        _orc_late_second,
        "a timestamp from 1969-12-31 23:59:59.001 to 23:59:59.999999 UTC (orc reads it back "
        "one second later)",
        ("orc",),
        ("parquet", "json", "csv"),
    ),
    _Hazard(
        _orc_earliest_date,
        "a date before -5877520-03-03 (Spark's orc writer cannot convert it)",
        ("orc",),
        ("parquet", "json", "csv"),
    ),
    _Hazard(
        _orc_earliest_timestamp,
        "a timestamp before -290301-01-01 00:00:00 UTC (Spark's orc writer cannot convert it)",
        ("orc",),
        ("parquet",),
    ),
)


def nested_predicate(
    expression: str, data_type: DataType, atomic: Atomic, depth: int = 0
) -> str | None:
    """``atomic`` applied to every flat value inside ``expression``, as one predicate."""
    if isinstance(data_type, UserDefinedType):
        return nested_predicate(expression, data_type.sqlType(), atomic, depth)
    variable = f"__connect_plugin_v{depth}"
    if isinstance(data_type, ArrayType):
        inner = nested_predicate(variable, data_type.elementType, atomic, depth + 1)
        return None if inner is None else f"exists({expression}, {variable} -> {inner})"
    if isinstance(data_type, MapType):
        parts = []
        sides = (("map_keys", data_type.keyType), ("map_values", data_type.valueType))
        for side, part_type in sides:
            inner = nested_predicate(variable, part_type, atomic, depth + 1)
            if inner is not None:
                parts.append(f"exists({side}({expression}), {variable} -> {inner})")
        return " OR ".join(f"({p})" for p in parts) or None
    if isinstance(data_type, StructType):
        parts = []
        for field in data_type.fields:
            inner = nested_predicate(
                f"{expression}.{quote_identifier(field.name)}", field.dataType, atomic, depth
            )
            if inner is not None:
                parts.append(inner)
        return " OR ".join(f"({p})" for p in parts) or None
    return atomic(expression, data_type)


def checked(
    relation: spark_proto.Relation,
    name: str,
    found: Sequence[Rule],
    values: Callable[[Rule], str] | None = None,
) -> spark_proto.Relation:
    """``relation`` with a filter that fails the job on the first value ``found`` refuses.

    ``values`` gives the expression of a rule's value in ``relation`` (its
    column, by default).
    """
    if not found:
        return relation
    with deep_messages():
        result = spark_proto.Relation()
        result.filter.input.CopyFrom(relation)
    case = result.filter.condition.unresolved_function
    case.function_name = "when"
    for rule in found:
        value = values(rule) if values is not None else quote_identifier(rule.column)
        condition = case.arguments.add()
        condition.expression_string.expression = f"coalesce({rule.predicate(value)}, false)"
        failure = case.arguments.add().unresolved_function
        failure.function_name = "raise_error"
        failure.arguments.append(literal(_message(name, rule)))
    case.arguments.append(literal(True))
    return result


def _message(name: str, rule: Rule) -> str:
    """The error of a refused value, led by its class, which the gateway finds again in
    Spark's error (``transport.spark_status``)."""
    if rule.refuser == NOT_NULL:
        return (
            f"[{NotNullViolation.error_class}] Temporary table [{name}]: column "
            f"[{rule.column}] is declared NOT NULL and a row gives it NULL; the write stopped "
            f"before committing any file ({rule.advice})"
        )
    return (
        f"[{ValueNotHeld.error_class}] Temporary table [{name}]: column [{rule.column}] of "
        f"type {rule.data_type.simpleString()} holds {rule.holds}, which {rule.refuser} "
        f"cannot hold exactly; the write stopped before committing any file ({rule.advice})"
    )
