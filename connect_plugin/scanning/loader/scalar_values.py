"""Rules for scalar columns: numbers, booleans, text, bytes, dates and times.

Integer, float and date columns are policed: Arrow's conversion would take
values the rules refuse (it truncates ``1.7`` to ``1`` and a datetime to its
date), so bulk writes screen their Python types. The other families accept
what Arrow accepts, with fast answers for the usual Python types.
"""

from __future__ import annotations

import datetime
import decimal
import numbers
import operator
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from connect_plugin.scanning.loader.values import NO_EMPTY, ValueMismatch, ValueRules


class IntRules(ValueRules):
    __slots__ = ("high", "low")

    def __init__(self, arrow_type: pa.DataType, nullable: bool) -> None:
        bits = arrow_type.bit_width
        super().__init__(
            arrow_type,
            nullable,
            width=bits // 8,
            empty=0,
            exact=frozenset({int}),
            census=frozenset({int}),
        )
        signed = pa.types.is_signed_integer(arrow_type)
        self.low = -(1 << (bits - 1)) if signed else 0
        self.high = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1

    def accept(self, value: Any) -> tuple[Any, int]:
        if type(value) is not int:
            if isinstance(value, bool) or not hasattr(type(value), "__index__"):
                raise ValueMismatch(self.describe(), value)
            value = operator.index(value)
        if not self.low <= value <= self.high:
            raise self._out_of_range(value)
        return value, 0

    def exact_values_bytes(self, values: Sequence[Any]) -> int:
        if values and (min(values) < self.low or max(values) > self.high):
            for index, value in enumerate(values):
                if not self.low <= value <= self.high:
                    raise self._out_of_range(value).inside(f"[{index}]")
        return 0

    def _out_of_range(self, value: int) -> ValueMismatch:
        return ValueMismatch(f"{self.arrow_type} between {self.low} and {self.high}", value)


class FloatRules(ValueRules):
    __slots__ = ()

    def __init__(self, arrow_type: pa.DataType, nullable: bool) -> None:
        super().__init__(
            arrow_type,
            nullable,
            width=arrow_type.bit_width // 8,
            empty=0.0,
            exact=frozenset({float, int}),
            census=frozenset({float, int}),
        )

    def accept(self, value: Any) -> tuple[Any, int]:
        if type(value) is float or type(value) is int:
            return value, 0
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueMismatch(self.describe(), value)
        return float(value), 0


class BoolRules(ValueRules):
    __slots__ = ()

    def __init__(self, arrow_type: pa.DataType, nullable: bool) -> None:
        super().__init__(
            arrow_type, nullable, width=0, bitmaps=2, empty=False, exact=frozenset({bool})
        )

    def accept(self, value: Any) -> tuple[Any, int]:
        if type(value) is bool:
            return value, 0
        return self._by_arrow(value)


class StringRules(ValueRules):
    __slots__ = ()

    def __init__(self, arrow_type: pa.DataType, nullable: bool) -> None:
        offset = 8 if pa.types.is_large_string(arrow_type) else 4
        super().__init__(
            arrow_type,
            nullable,
            width=offset,
            constant=offset,
            empty="",
            exact=frozenset({str}),
        )

    def accept(self, value: Any) -> tuple[Any, int]:
        if isinstance(value, str):
            if value.isascii():
                return value, len(value)
            try:
                return value, len(value.encode())
            except UnicodeEncodeError as exc:
                raise ValueMismatch(
                    f"{self.describe()} (text that encodes as UTF-8)", value
                ) from exc
        if isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
            try:
                data.decode()
            except UnicodeDecodeError as exc:
                raise ValueMismatch(f"{self.describe()} (valid UTF-8 bytes)", value) from exc
            return data, len(data)
        raise ValueMismatch(self.describe(), value)

    def exact_values_bytes(self, values: Sequence[Any]) -> int:
        if all(map(str.isascii, values)):
            return sum(map(len, values))
        return sum(self.accept(value)[1] for value in values)

    def array_var_bytes(self, array: pa.Array) -> int:
        return int(pc.sum(pc.binary_length(array)).as_py() or 0)


class BinaryRules(ValueRules):
    __slots__ = ()

    def __init__(self, arrow_type: pa.DataType, nullable: bool) -> None:
        offset = 8 if pa.types.is_large_binary(arrow_type) else 4
        super().__init__(
            arrow_type,
            nullable,
            width=offset,
            constant=offset,
            empty=b"",
            exact=frozenset({bytes}),
        )

    def accept(self, value: Any) -> tuple[Any, int]:
        if isinstance(value, bytes):
            return value, len(value)
        if isinstance(value, (bytearray, memoryview)):
            data = bytes(value)
            return data, len(data)
        if isinstance(value, str):
            try:
                data = value.encode()
            except UnicodeEncodeError as exc:
                raise ValueMismatch(
                    f"{self.describe()} (text that encodes as UTF-8)", value
                ) from exc
            return data, len(data)
        raise ValueMismatch(self.describe(), value)

    def exact_values_bytes(self, values: Sequence[Any]) -> int:
        return sum(map(len, values))

    def array_var_bytes(self, array: pa.Array) -> int:
        return int(pc.sum(pc.binary_length(array)).as_py() or 0)


class FixedBinaryRules(ValueRules):
    __slots__ = ("size",)

    def __init__(self, arrow_type: pa.DataType, nullable: bool) -> None:
        self.size = arrow_type.byte_width
        super().__init__(
            arrow_type,
            nullable,
            width=self.size,
            empty=bytes(self.size),
            exact=frozenset({bytes}),
        )

    def accept(self, value: Any) -> tuple[Any, int]:
        if isinstance(value, (bytes, bytearray, memoryview)) and len(value) == self.size:
            return bytes(value), 0
        raise ValueMismatch(f"{self.describe()} ({self.size} bytes)", value)

    def exact_values_bytes(self, values: Sequence[Any]) -> int:
        for index, value in enumerate(values):
            if len(value) != self.size:
                raise ValueMismatch(f"{self.describe()} ({self.size} bytes)", value).inside(
                    f"[{index}]"
                )
        return 0


class DateRules(ValueRules):
    """Dates take ``datetime.date`` or days (milliseconds for date64) since the epoch.

    A ``datetime`` is refused rather than silently losing its time of day.
    """

    __slots__ = ()

    def __init__(self, arrow_type: pa.DataType, nullable: bool) -> None:
        super().__init__(
            arrow_type,
            nullable,
            width=arrow_type.bit_width // 8,
            empty=NO_EMPTY,
            exact=frozenset({datetime.date, int}),
            census=frozenset({datetime.date, int}),
        )

    def accept(self, value: Any) -> tuple[Any, int]:
        if type(value) is datetime.date or type(value) is int:
            return value, 0
        if isinstance(value, datetime.datetime):
            raise ValueMismatch(f"{self.describe()} (a date, not a datetime)", value)
        if isinstance(value, datetime.date):
            return value, 0
        raise ValueMismatch(self.describe(), value)


class ArrowConvertedRules(ValueRules):
    """Exact Python types pass as they are; ``refused`` ones never reach Arrow,
    which would convert them silently; anything else gets Arrow's own rules."""

    __slots__ = ()
    refused: tuple[type, ...] = (bool,)

    def accept(self, value: Any) -> tuple[Any, int]:
        if type(value) in self.exact:
            return value, 0
        if isinstance(value, self.refused):
            raise ValueMismatch(self.describe(), value)
        return self._by_arrow(value)


class TemporalRules(ArrowConvertedRules):
    """Timestamps, times and durations, converted by Arrow's own rules."""

    __slots__ = ()

    def __init__(self, arrow_type: pa.DataType, nullable: bool) -> None:
        if pa.types.is_timestamp(arrow_type):
            exact: frozenset[type] = frozenset({datetime.datetime, int})
        elif pa.types.is_duration(arrow_type):
            exact = frozenset({datetime.timedelta, int})
        else:
            exact = frozenset({datetime.time, int})
        empty = 0 if pa.types.is_duration(arrow_type) else NO_EMPTY
        super().__init__(
            arrow_type, nullable, width=arrow_type.bit_width // 8, empty=empty, exact=exact
        )


class DecimalRules(ArrowConvertedRules):
    __slots__ = ()
    refused = (bool, float)

    def __init__(self, arrow_type: pa.DataType, nullable: bool) -> None:
        super().__init__(
            arrow_type,
            nullable,
            width=arrow_type.bit_width // 8,
            empty=0,
            exact=frozenset({decimal.Decimal, int}),
        )


class NullRules(ValueRules):
    __slots__ = ()

    def __init__(self, arrow_type: pa.DataType, nullable: bool) -> None:
        super().__init__(
            arrow_type,
            nullable,
            width=0,
            bitmaps=0,
            empty=None,
            exact=frozenset(),
            census=frozenset(),
        )

    def accept(self, value: Any) -> tuple[Any, int]:
        raise ValueMismatch("null (the column has type null)", value)
