"""Partition pruning: skip files whose directory values cannot pass the query's filters.

A partition column (``dirN``, a hive key) has one value per file, and so
has an implicit file column (``filename``, ``suffix``, ...), so a filter on
either decides a whole file before the file is opened. Filters arrive
as ``PartitionFilter`` values (the Spark binding translates Spark's pushed
filters into them) and are combined with AND, as Spark pushes them. SQL's
three-valued logic applies: a comparison with null is unknown, and a file
is kept only when every filter is true for it. A filter this module cannot
judge for a file (a string compared with a number) keeps the file, so
pruning never drops a row the query wants; Spark evaluates the filters
again on the rows that come back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from connect_plugin.scanning.files import ScanFile
from connect_plugin.scanning.implicit import dir_value, file_value, hive_pairs, hive_value
from connect_plugin.scanning.plan import ScanPlan
from connect_plugin.scanning.projection import Kind, OutputColumn

OPERATORS = frozenset(
    {
        "eq", "eq_null_safe", "gt", "ge", "lt", "le", "in", "is_null", "is_not_null",
        "starts_with", "ends_with", "contains",
    }
)  # fmt: skip

_UNDECIDED = object()


@dataclass(frozen=True)
class PartitionFilter:
    """``column <op> value``, or its negation; ``value`` is a tuple for ``in``."""

    op: str
    column: str
    value: Any = None
    negated: bool = False

    def __post_init__(self) -> None:
        if self.op not in OPERATORS:
            raise ValueError(f"unknown filter operator {self.op!r}; use one of {sorted(OPERATORS)}")


def partition_column(plan: ScanPlan, name: str) -> OutputColumn | None:
    """The output column a filter names, if it has one value per file (dirN, hive, implicit)."""
    key = name.casefold()
    for column in plan.columns:
        if column.name.casefold() == key and column.kind in (Kind.DIR, Kind.HIVE, Kind.FILE):
            return column
    return None


def prune(plan: ScanPlan, filters: Sequence[PartitionFilter]) -> tuple[ScanFile, ...]:
    """The plan's files that every filter on a partition column may keep, in order."""
    judged = [
        (column, found)
        for found in filters
        if (column := partition_column(plan, found.column)) is not None
    ]
    if not judged:
        return plan.files
    return tuple(
        scan_file
        for scan_file in plan.files
        if all(_keeps(found, _value(column, scan_file)) for column, found in judged)
    )


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


def _keeps(found: PartitionFilter, value: Any) -> bool:
    if value is _UNDECIDED:
        return True
    result = _evaluate(found.op, value, found.value)
    if result is _UNDECIDED:
        return True
    if found.negated and result is not None:
        result = not result
    return result is True


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


def _compare(op: str, value: Any, operand: Any) -> Any:
    if isinstance(value, str) != isinstance(operand, str) or isinstance(operand, bool):
        return _UNDECIDED
    if op in ("starts_with", "ends_with", "contains"):
        if not isinstance(value, str):
            return _UNDECIDED
        if op == "starts_with":
            return value.startswith(operand)
        if op == "ends_with":
            return value.endswith(operand)
        return operand in value
    try:
        if op in ("eq", "eq_null_safe"):
            return value == operand
        if op == "gt":
            return value > operand
        if op == "ge":
            return value >= operand
        if op == "lt":
            return value < operand
        return value <= operand
    except TypeError:
        return _UNDECIDED
