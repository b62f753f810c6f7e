"""How Python values map onto the Arrow type of a column: the common ground.

The row writer needs three things per value that ``pyarrow.array`` does not
give it: a strict yes or no while the reader still holds the value (Arrow
silently truncates ``1.7`` written to an integer column and drops struct keys
it does not know), the number of bytes the value adds to the batch's Arrow
buffers (an upper bound, so that a batch never passes its byte limit), and
the empty value that fills a non-nullable column a row left unset.

Byte accounting splits a column into a part that grows with the row count
(``width`` bytes per row, ``bitmaps`` bits per row rounded up to whole bytes,
``constant`` bytes once per array, such as the extra offset of a string
array) and a variable part reported per value (string data, list children).
Counting each list value's child bitmaps with its own rounding and every
bitmap as present, whether or not Arrow allocates it, keeps the sum an upper
bound of what the built arrays hold.

The rules of each type family live in ``scalar_values`` and
``nested_values``; ``type_rules.rules_for`` picks them for a field.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

import pyarrow as pa

NoneType: Final = type(None)


class _Marker:
    """A named sentinel whose repr reads well in error messages."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


MISSING: Final = _Marker("<missing>")
"""Stands for a value a row did not provide (an absent dict key)."""

NO_EMPTY: Final = _Marker("<no empty value>")
"""The empty value of a type that has none a reader would accept (dates, times)."""


class ValueMismatch(Exception):
    """A value does not fit a column type; ``path`` says where inside the value."""

    def __init__(self, expected: str, value: object, path: str = "") -> None:
        super().__init__(expected)
        self.expected = expected
        self.value = value
        self.path = path

    def inside(self, step: str) -> ValueMismatch:
        self.path = step + self.path
        return self


class ValueMissing(ValueMismatch):
    """A gap in a non-nullable column whose type has no empty value to fill it."""


def bitmap_bytes(bits: int) -> int:
    return (bits + 7) >> 3


_NULL_TYPES: Final = {True: frozenset({NoneType}), False: frozenset()}


class ValueRules:
    """Accepts, measures and fills values of one Arrow type.

    ``exact`` holds the Python types a value may have to be stored as it is;
    a list whose elements all have them is checked and measured in one go.
    ``census`` is the set of Python types that Arrow's own conversion turns
    into exactly what :meth:`accept` would give; a bulk write whose values
    all have such types skips the per-value check. ``None`` means Arrow's
    conversion is trusted for any value it accepts, so only nulls in a
    non-nullable column need a look.
    """

    __slots__ = (
        "arrow_type",
        "bitmaps",
        "census",
        "constant",
        "empty",
        "exact",
        "nullable",
        "width",
    )

    def __init__(
        self,
        arrow_type: pa.DataType,
        nullable: bool,
        *,
        width: int,
        empty: Any,
        exact: frozenset[type],
        bitmaps: int = 1,
        constant: int = 0,
        census: frozenset[type] | None = None,
    ) -> None:
        self.arrow_type = arrow_type
        self.nullable = nullable
        self.width = width
        self.bitmaps = bitmaps
        self.constant = constant
        self.empty = empty
        self.exact = exact
        self.census = None if census is None else census | _NULL_TYPES[nullable]

    def describe(self) -> str:
        return f"{self.arrow_type}" + ("" if self.nullable else " not null")

    def fixed_bytes(self, rows: int) -> int:
        return rows * self.width + bitmap_bytes(rows) * self.bitmaps + self.constant

    def default(self) -> Any:
        """The value of a row that did not set this column."""
        return None if self.nullable else self.empty

    def slot_value(self, value: Any) -> tuple[Any, int]:
        """Accept a value for one slot, where ``None`` is null and ``MISSING`` is omitted."""
        if value is None:
            if self.nullable:
                return None, 0
            raise ValueMismatch(f"a value ({self.describe()} is not nullable)", None)
        if value is MISSING:
            if self.nullable:
                return None, 0
            if self.empty is NO_EMPTY:
                raise ValueMissing(
                    f"a value ({self.describe()} has no empty value to fill a gap)", value
                )
            return self.empty, 0
        return self.accept(value)

    def accept(self, value: Any) -> tuple[Any, int]:
        """Return the value to store and its variable bytes; ``value`` is not None."""
        return self._by_arrow(value)

    def exact_values_bytes(self, values: Sequence[Any]) -> int:
        """Variable bytes of values that all have an ``exact`` type; may raise on range."""
        return 0

    def screen(self, values: Iterable[Any]) -> bool:
        """Whether ``pyarrow.array(values)`` yields what per-value acceptance would."""
        if self.census is not None:
            return set(map(type, values)) <= self.census
        if self.nullable:
            return True
        if not isinstance(values, Sequence):
            values = list(values)
        return None not in values and MISSING not in values

    def array_var_bytes(self, array: pa.Array) -> int:
        """Variable bytes of an already built array of this type (slices respected)."""
        return 0

    def _by_arrow(self, value: Any) -> tuple[Any, int]:
        try:
            pa.scalar(value, type=self.arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            raise ValueMismatch(self.describe(), value) from exc
        return value, 0
