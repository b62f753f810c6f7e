"""Partition pruning: skip files whose directory values cannot pass the query's filter.

A partition column (``dirN``, a hive key) has one value per file, and so
has an implicit file column (``filename``, ``suffix``, ...), so a filter on
either decides a whole file before the file is opened. The filter arrives
as a ``FileFilter`` (``predicates``). SQL's three-valued logic applies: a
comparison with null is unknown, and a file is kept unless the filter
cannot be true for it. A comparison this module cannot judge for a file (a
column with a value per row, a string compared with a number, a NaN) may
be anything, so pruning never drops a row the query wants; Spark evaluates
the query's condition again on the rows that come back.

Values compare as Spark compares them after its type coercion: strings by
code point (the byte order of UTF-8, Spark's default collation), numbers
exactly, except that a float against any other number compares as two
doubles.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

from connect_plugin.scanning.files.files import ScanFile
from connect_plugin.scanning.names import fold
from connect_plugin.scanning.planning.implicit import dir_value, file_value, hive_pairs, hive_value
from connect_plugin.scanning.planning.plan import ScanPlan
from connect_plugin.scanning.planning.projection import Kind, OutputColumn
from connect_plugin.scanning.request.predicates import (
    AllOf,
    AnyOf,
    FileFilter,
    NoneOf,
    PartitionFilter,
    all_of,
)

Outcomes = frozenset[bool | None]
"""What a condition may be for a file: some of True, False and None (SQL's unknown)."""

_ANY: Outcomes = frozenset({True, False, None})
_UNDECIDED = object()


def partition_column(plan: ScanPlan, name: str) -> OutputColumn | None:
    """The output column a filter names, if it has one value per file (dirN, hive, implicit)."""
    key = fold(name)
    for column in plan.columns:
        if fold(column.name) == key and column.kind in (Kind.DIR, Kind.HIVE, Kind.FILE):
            return column
    return None


def prune(
    plan: ScanPlan, filters: FileFilter | Sequence[FileFilter] | None
) -> tuple[ScanFile, ...]:
    """The plan's files the filter (a sequence: all of them) may keep, in order."""
    if filters is None:
        return plan.files
    condition = filters if isinstance(filters, FileFilter) else all_of(filters)
    if condition is None or not _names_partition_column(plan, condition):
        return plan.files
    return tuple(f for f in plan.files if True in _outcomes(plan, condition, f))


def _names_partition_column(plan: ScanPlan, condition: FileFilter) -> bool:
    if isinstance(condition, AllOf | AnyOf):
        return any(_names_partition_column(plan, part) for part in condition.parts)
    if isinstance(condition, NoneOf):
        return _names_partition_column(plan, condition.part)
    return partition_column(plan, condition.column) is not None


def _outcomes(plan: ScanPlan, condition: FileFilter, scan_file: ScanFile) -> Outcomes:
    if isinstance(condition, AllOf):
        result: Outcomes = frozenset({True})
        for part in condition.parts:
            result = _combine(result, _outcomes(plan, part, scan_file), _and)
        return result
    if isinstance(condition, AnyOf):
        result = frozenset({False})
        for part in condition.parts:
            result = _combine(result, _outcomes(plan, part, scan_file), _or)
        return result
    if isinstance(condition, NoneOf):
        return frozenset(_not(value) for value in _outcomes(plan, condition.part, scan_file))
    column = partition_column(plan, condition.column)
    if column is None:
        return _ANY
    value = _value(column, scan_file)
    if value is _UNDECIDED:
        return _ANY
    result_value = _evaluate(condition.op, value, condition.value)
    if result_value is _UNDECIDED:
        return _ANY
    return frozenset({_not(result_value) if condition.negated else result_value})


def _combine(left: Outcomes, right: Outcomes, op: Any) -> Outcomes:
    return frozenset(op(a, b) for a in left for b in right)


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _not(a: bool | None) -> bool | None:
    return None if a is None else not a


def _value(column: OutputColumn, scan_file: ScanFile) -> Any:
    if column.kind is Kind.DIR:
        return dir_value(column.index, scan_file)
    if column.kind is Kind.FILE:
        return file_value(column.source, scan_file)
    text = hive_pairs(scan_file).get(column.source)
    try:
        return hive_value(text, column.field.type)
    except (pa.ArrowException, ValueError, TypeError):
        return _UNDECIDED


def _evaluate(op: str, value: Any, operand: Any) -> Any:
    """True, False, None (SQL unknown) or ``_UNDECIDED`` when the types do not compare."""
    if op == "is_null":
        return value is None
    if op == "is_not_null":
        return value is not None
    if op == "eq_null_safe":
        if value is None or operand is None:
            return value is None and operand is None
        return _compare(op, value, operand)
    if value is None:
        return None
    if op == "in":
        return _is_in(value, operand)
    if operand is None:
        return None
    return _compare(op, value, operand)


def _is_in(value: Any, operands: Iterable[Any]) -> Any:
    unknown = False
    for operand in operands:
        if operand is None:
            unknown = True
            continue
        result = _compare("eq", value, operand)
        if result is _UNDECIDED:
            return _UNDECIDED
        if result:
            return True
    return None if unknown else False


_TEXT_OPERATORS = frozenset({"starts_with", "ends_with", "contains"})


def _compare(op: str, value: Any, operand: Any) -> Any:
    if isinstance(value, str) and isinstance(operand, str):
        if op == "starts_with":
            return value.startswith(operand)
        if op == "ends_with":
            return value.endswith(operand)
        if op == "contains":
            return operand in value
        return _ordered(op, value, operand)
    numbers = _numbers(value, operand)
    if numbers is None or op in _TEXT_OPERATORS:
        return _UNDECIDED
    return _ordered(op, *numbers)


def _ordered(op: str, left: Any, right: Any) -> bool:
    if op in ("eq", "eq_null_safe"):
        return bool(left == right)
    if op == "gt":
        return bool(left > right)
    if op == "ge":
        return bool(left >= right)
    if op == "lt":
        return bool(left < right)
    return bool(left <= right)


def _numbers(value: Any, operand: Any) -> tuple[Any, Any] | None:
    """Both sides as numbers Spark would compare, or None when they are not both numbers."""
    kinds = (int, float, Decimal)
    for side in (value, operand):
        if isinstance(side, bool) or not isinstance(side, kinds):
            return None
        if isinstance(side, float | Decimal) and not math.isfinite(side):
            return None
    if isinstance(value, float) or isinstance(operand, float):
        return float(value), float(operand)
    return value, operand


__all__ = ["FileFilter", "PartitionFilter", "partition_column", "prune"]
