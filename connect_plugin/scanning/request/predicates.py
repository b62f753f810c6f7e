"""Conditions on a scan's columns that can decide whole files: the language of file pruning.

A ``FileFilter`` is what the gateway knows of the ``Filter`` a query puts
straight above a scan: comparisons of a column with literal values
(``PartitionFilter``), joined by ``AllOf`` (AND), ``AnyOf`` (OR) and
``NoneOf`` (NOT). Parts of a condition it cannot read are left out of it, so
a ``FileFilter`` is never stricter than the query's own condition: a file it
rules out holds no row the query keeps. Spark still evaluates the query's
condition on every row read.

It travels inside the scan spec, as JSON. Values are strings, whole
numbers, finite floats, decimals and null; a decimal is written
``{"decimal": "3.10"}`` so that it compares exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from connect_plugin.errors import InvalidScanSpec

OPERATORS = frozenset(
    {
        "eq", "eq_null_safe", "gt", "ge", "lt", "le", "in", "is_null", "is_not_null",
        "starts_with", "ends_with", "contains",
    }
)  # fmt: skip

Value = str | int | float | Decimal | None


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


@dataclass(frozen=True)
class AllOf:
    """Every part holds (SQL AND)."""

    parts: tuple[FileFilter, ...]


@dataclass(frozen=True)
class AnyOf:
    """Some part holds (SQL OR)."""

    parts: tuple[FileFilter, ...]


@dataclass(frozen=True)
class NoneOf:
    """The part does not hold (SQL NOT)."""

    part: FileFilter


FileFilter = PartitionFilter | AllOf | AnyOf | NoneOf


def all_of(parts: Sequence[FileFilter | None]) -> FileFilter | None:
    """AND of the parts that are known; None (nothing known) when none is."""
    known = _flat(AllOf, [part for part in parts if part is not None])
    if not known:
        return None
    return known[0] if len(known) == 1 else AllOf(known)


def any_of(parts: Sequence[FileFilter | None]) -> FileFilter | None:
    """OR of the parts; None when any part is unknown, since that part may hold for any file."""
    if not parts or any(part is None for part in parts):
        return None
    known = _flat(AnyOf, [part for part in parts if part is not None])
    return known[0] if len(known) == 1 else AnyOf(known)


def _flat(kind: type[AllOf | AnyOf], parts: Sequence[FileFilter]) -> tuple[FileFilter, ...]:
    """The parts, with those of nested filters of the same kind in their place."""
    flat: list[FileFilter] = []
    for part in parts:
        flat.extend(part.parts if isinstance(part, kind) else (part,))
    return tuple(flat)


def none_of(part: FileFilter | None) -> FileFilter | None:
    """NOT of a filter that says exactly what its condition says (a comparison).

    A filter with unread parts left out is weaker than its condition, and
    its NOT would be stricter: readers push a NOT down to the comparisons
    (``joined`` under ``negated``) instead of applying it to such a filter.
    """
    return None if part is None else NoneOf(part)


def joined(conjunction: bool, negated: bool, parts: Sequence[FileFilter | None]) -> FileFilter | None:
    """``parts`` joined by AND (``conjunction``) or OR, under a NOT when ``negated``: each
    part is already read under that NOT, so by De Morgan NOT (a AND b) is (NOT a) OR
    (NOT b), and NOT (a OR b) is (NOT a) AND (NOT b), in SQL's three-valued logic too."""
    return all_of(parts) if conjunction != negated else any_of(parts)


def negated_if(negated: bool, found: FileFilter | None) -> FileFilter | None:
    """A comparison's filter, or its NOT when it stands under one."""
    return none_of(found) if negated else found


def literal(value: Any) -> Value:
    """A value a ``PartitionFilter`` may compare with, or ``ValueError``."""
    if value is None or isinstance(value, str | Decimal):
        return value
    if isinstance(value, bool):
        raise ValueError("booleans are no partition values")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise ValueError(f"{value!r} is no value a file filter compares with")


def to_json(found: FileFilter) -> Any:
    """The filter as JSON-ready data."""
    if isinstance(found, AllOf):
        return {"all": [to_json(part) for part in found.parts]}
    if isinstance(found, AnyOf):
        return {"any": [to_json(part) for part in found.parts]}
    if isinstance(found, NoneOf):
        return {"not": to_json(found.part)}
    value = found.value
    encoded = [_value_to_json(v) for v in value] if found.op == "in" else _value_to_json(value)
    data = {"op": found.op, "column": found.column, "value": encoded}
    if found.negated:
        data["negated"] = True
    return data


def from_json(data: Any) -> FileFilter:
    """The filter of ``to_json``; ``InvalidScanSpec`` for anything else."""
    try:
        return _from_json(data)
    except (KeyError, TypeError, ValueError, InvalidOperation) as exc:
        raise InvalidScanSpec(f"the scan spec's file filter is not valid: {exc}") from exc


def _from_json(data: Any) -> FileFilter:
    if not isinstance(data, dict):
        raise TypeError(f"expected an object, got {data!r}")
    if "all" in data:
        return AllOf(tuple(_from_json(part) for part in data["all"]))
    if "any" in data:
        return AnyOf(tuple(_from_json(part) for part in data["any"]))
    if "not" in data:
        return NoneOf(_from_json(data["not"]))
    op = data["op"]
    if not isinstance(op, str) or not isinstance(data["column"], str):
        raise TypeError("a comparison needs a string 'op' and 'column'")
    raw = data.get("value")
    if op == "in":
        if not isinstance(raw, list):
            raise TypeError("'in' needs a list of values")
        value: Any = tuple(_value_from_json(v) for v in raw)
    else:
        value = _value_from_json(raw)
    return PartitionFilter(op, data["column"], value, bool(data.get("negated", False)))


def _value_to_json(value: Value) -> Any:
    return {"decimal": str(value)} if isinstance(value, Decimal) else value


def _value_from_json(data: Any) -> Value:
    if isinstance(data, dict):
        return Decimal(data["decimal"])
    return literal(data)
