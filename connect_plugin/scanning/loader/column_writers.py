"""Column writers: the per-value hot path of the row writer.

A column writer puts a value into its slot of the open row and charges the
value's variable bytes against the room left in the batch. The common
Python types of each column kind take a fast path of a type test and a slot
store; everything else goes through the column's ``ValueRules``. When the
room runs out the batch (``RowRoom``) decides between moving the row to the
look-ahead batch and refusing the value.
"""

from __future__ import annotations

from typing import Any, Protocol

import pyarrow as pa

from connect_plugin.errors import ColumnTypeError, MissingValue, RowTooLarge, ValueTooLarge
from connect_plugin.scanning.loader.nested_values import ListRules
from connect_plugin.scanning.loader.scalar_values import (
    BinaryRules,
    BoolRules,
    FloatRules,
    IntRules,
    StringRules,
)
from connect_plugin.scanning.loader.values import ValueMismatch, ValueMissing, ValueRules


class RowRoom(Protocol):
    """What a column writer needs from the batch it writes into, and nothing more.

    ``room`` is a plain attribute, not a property: each variable-width value
    reads and writes it, and only a value that takes it below zero costs a call.
    """

    room: int
    """Bytes the open row may still use."""

    def overflow(self, column: ColumnWriter, size: int) -> None:
        """The room went negative writing ``size`` bytes to ``column``: overflow, or refuse."""

    def open_row_number(self) -> int:
        """Number of the open row, counting saved rows of all batches from 0."""


def describe_value(value: object) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def value_error(name: str, row: int, exc: ValueMismatch) -> ColumnTypeError | MissingValue:
    """The public error for a value a column refused, naming column, row and types."""
    where = f"column '{name}'" + (f" at {exc.path}" if exc.path else "")
    if isinstance(exc, ValueMissing):
        return MissingValue(f"{where}, row {row}: expected {exc.expected}; set a value")
    return ColumnTypeError(
        f"{where}, row {row}: expected {exc.expected}, got {describe_value(exc.value)}"
    )


def value_too_large(name: str, row: int, size: int, max_bytes: int) -> ValueTooLarge:
    return ValueTooLarge(
        f"column '{name}', row {row}: a value of {size} bytes cannot fit a batch of at most "
        f"{max_bytes} bytes (max_bytes); raise max_bytes or split the value"
    )


def row_too_large(row: int, size: int, max_bytes: int, detail: str) -> RowTooLarge:
    return RowTooLarge(
        f"row {row} needs at least {size} bytes, more than a whole batch may hold "
        f"(max_bytes={max_bytes}); {detail}"
    )


class ColumnWriter:
    """Writes one column of the open row; ``set`` takes scalars, lists and dicts.

    Writers of unprojected columns accept and drop every value, so a reader
    can write all of its columns without asking which ones the query needs.
    """

    __slots__ = (
        "_batch",
        "_index",
        "_nullable",
        "_row",
        "field",
        "is_projected",
        "name",
        "position",
        "rules",
    )

    def __init__(
        self,
        batch: RowRoom,
        field: pa.Field,
        rules: ValueRules,
        index: int,
        row: list[Any],
        *,
        projected: bool = True,
    ) -> None:
        self._batch = batch
        self._row = row
        self._index = index
        self._nullable: bool = field.nullable
        self.field = field
        self.name: str = field.name
        self.rules = rules
        self.is_projected = projected
        self.position = 0
        """Place among all the writer's columns, projected or not, in the order they were added."""

    @property
    def slot(self) -> int:
        """Place of a projected column among the projected ones (-1 for an unprojected one)."""
        return self._index

    def __repr__(self) -> str:
        projected = "" if self.is_projected else ", unprojected"
        return f"<{type(self).__name__} {self.name!r}: {self.rules.describe()}{projected}>"

    def set(self, value: Any) -> None:
        """Set this column's value in the open row (``None`` is null)."""
        self._set_checked(value)

    def _set_checked(self, value: Any) -> None:
        try:
            stored, size = self.rules.slot_value(value)
        except ValueMismatch as exc:
            raise value_error(self.name, self._batch.open_row_number(), exc) from None
        if size:
            batch = self._batch
            room = batch.room - size
            batch.room = room
            if room < 0:
                batch.overflow(self, size)
        self._row[self._index] = stored


class Int64Writer(ColumnWriter):
    __slots__ = ()

    def set(self, value: Any) -> None:
        if type(value) is int and -9223372036854775808 <= value <= 9223372036854775807:
            self._row[self._index] = value
        elif value is None and self._nullable:
            self._row[self._index] = None
        else:
            self._set_checked(value)


class IntWriter(ColumnWriter):
    __slots__ = ("_high", "_low")

    def __init__(
        self, batch: RowRoom, field: pa.Field, rules: IntRules, index: int, row: list[Any]
    ) -> None:
        super().__init__(batch, field, rules, index, row)
        self._low = rules.low
        self._high = rules.high

    def set(self, value: Any) -> None:
        if type(value) is int and self._low <= value <= self._high:
            self._row[self._index] = value
        elif value is None and self._nullable:
            self._row[self._index] = None
        else:
            self._set_checked(value)


class FloatWriter(ColumnWriter):
    __slots__ = ()

    def set(self, value: Any) -> None:
        if type(value) is float:
            self._row[self._index] = value
        elif value is None and self._nullable:
            self._row[self._index] = None
        else:
            self._set_checked(value)


class BoolWriter(ColumnWriter):
    __slots__ = ()

    def set(self, value: Any) -> None:
        if type(value) is bool:
            self._row[self._index] = value
        elif value is None and self._nullable:
            self._row[self._index] = None
        else:
            self._set_checked(value)


class StringWriter(ColumnWriter):
    __slots__ = ()

    def set(self, value: Any) -> None:
        if type(value) is str and value.isascii():
            batch = self._batch
            room = batch.room - len(value)
            batch.room = room
            if room < 0:
                batch.overflow(self, len(value))
            self._row[self._index] = value
        elif value is None and self._nullable:
            self._row[self._index] = None
        else:
            self._set_checked(value)


class BytesWriter(ColumnWriter):
    __slots__ = ()

    def set(self, value: Any) -> None:
        if type(value) is bytes:
            batch = self._batch
            room = batch.room - len(value)
            batch.room = room
            if room < 0:
                batch.overflow(self, len(value))
            self._row[self._index] = value
        elif value is None and self._nullable:
            self._row[self._index] = None
        else:
            self._set_checked(value)


class ScalarListWriter(ColumnWriter):
    """Lists of scalars: a look at each element's type, then the size from the count.

    The list is copied into a tuple, so a reader may reuse its list for the
    next row, and the garbage collector need not track the copy. Integer
    elements out of their type's range are left for Arrow to refuse at
    harvest, where the error still names the column and the row.
    """

    __slots__ = ("_element_bitmaps", "_element_width", "_exact", "_measure")

    def __init__(
        self, batch: RowRoom, field: pa.Field, rules: ListRules, index: int, row: list[Any]
    ) -> None:
        super().__init__(batch, field, rules, index, row)
        child = rules.child
        self._exact = child.exact
        self._element_width = child.width
        self._element_bitmaps = child.bitmaps
        sized = isinstance(child, (StringRules, BinaryRules))
        self._measure = child.exact_values_bytes if sized else None

    def set(self, value: Any) -> None:
        if type(value) is not list:
            if value is None and self._nullable:
                self._row[self._index] = None
            else:
                self._set_checked(value)
            return
        exact = self._exact
        for element in value:
            if type(element) not in exact:
                self._set_checked(value)
                return
        count = len(value)
        size = count * self._element_width + ((count + 7) >> 3) * self._element_bitmaps
        if self._measure is not None:
            size += self._measure(value)
        if size:
            batch = self._batch
            room = batch.room - size
            batch.room = room
            if room < 0:
                batch.overflow(self, size)
        self._row[self._index] = tuple(value)


class DiscardWriter(ColumnWriter):
    """The writer of a column the query does not project: values go nowhere."""

    __slots__ = ()

    def set(self, value: Any) -> None:
        pass


def make_column_writer(
    batch: RowRoom, field: pa.Field, rules: ValueRules, index: int, row: list[Any]
) -> ColumnWriter:
    """Pick the writer class whose fast path suits the column's type."""
    if isinstance(rules, IntRules):
        if pa.types.is_int64(field.type):
            return Int64Writer(batch, field, rules, index, row)
        return IntWriter(batch, field, rules, index, row)
    if isinstance(rules, ListRules) and rules.size is None and rules.child.exact:
        return ScalarListWriter(batch, field, rules, index, row)
    kind: type[ColumnWriter] = ColumnWriter
    if isinstance(rules, FloatRules):
        kind = FloatWriter
    elif isinstance(rules, BoolRules):
        kind = BoolWriter
    elif isinstance(rules, StringRules):
        kind = StringWriter
    elif isinstance(rules, BinaryRules):
        kind = BytesWriter
    return kind(batch, field, rules, index, row)
