"""Turning the rows and bulk-built arrays of one batch into a RecordBatch.

A batch accumulates in segments: runs of saved rows (tuples, converted in
one ``pyarrow.array`` call per run) and arrays built by bulk writes. A
column added mid-batch starts a new segment, so each segment has a width;
columns a segment lacks are back-filled with nulls or empty values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from connect_plugin.errors import ColumnTypeError, ScanError
from connect_plugin.scanning.loader.column_writers import describe_value
from connect_plugin.scanning.loader.values import ValueRules

ARROW_CONVERSION_ERRORS = (pa.ArrowException, TypeError, ValueError, OverflowError)
"""What ``pyarrow.array`` raises for a Python value it cannot convert."""


@dataclass(slots=True)
class RowSegment:
    """Saved rows, each a tuple with one value per projected column of the first ``width``."""

    width: int
    rows: list[tuple[Any, ...]]


@dataclass(slots=True)
class ArraySegment:
    """Arrays built by a bulk write, one per projected column of the first ``width``."""

    width: int
    arrays: list[pa.Array]
    length: int


Segment = RowSegment | ArraySegment


def build_batch(
    fields: list[pa.Field],
    rules: list[ValueRules],
    segments: list[Segment],
    count: int,
    first_row: int,
) -> pa.RecordBatch:
    """Assemble the batch of ``count`` rows whose first row has number ``first_row``."""
    if not fields:
        return pa.RecordBatch.from_struct_array(pa.array([{}] * count, type=pa.struct([])))
    parts: list[list[pa.Array]] = [[] for _ in fields]
    row = first_row
    for segment in segments:
        if isinstance(segment, RowSegment):
            length = len(segment.rows)
            if not length:
                continue
            arrays = rows_to_arrays(segment.rows, fields[: segment.width], row)
        else:
            length = segment.length
            arrays = segment.arrays
        for index, column in enumerate(parts):
            if index < segment.width:
                column.append(arrays[index])
            else:
                column.append(fill_array(fields[index], rules[index], length))
        row += length
    columns = [
        column[0]
        if len(column) == 1
        else pa.concat_arrays(column)
        if column
        else pa.array([], type=field.type)
        for column, field in zip(parts, fields, strict=True)
    ]
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


def fill_array(field: pa.Field, rules: ValueRules, length: int) -> pa.Array:
    """Nulls, or empty values for a non-nullable column, for rows written before it existed."""
    return pa.array([rules.default()] * length, type=field.type)


def rows_to_arrays(
    rows: list[tuple[Any, ...]], fields: list[pa.Field], first_row: int
) -> list[pa.Array]:
    if not fields:
        return []
    try:
        struct = pa.array(rows, type=pa.struct(fields))
    except ARROW_CONVERSION_ERRORS as exc:
        for index, field in enumerate(fields):
            values = [row[index] for row in rows]
            locate_conversion_error(field, values, first_row)
        raise ScanError(f"Arrow could not build rows {first_row}.. of the batch: {exc}") from exc
    return [struct.field(index) for index in range(len(fields))]


def locate_conversion_error(field: pa.Field, values: list[Any], first_row: int) -> None:
    """Raise a ``ColumnTypeError`` for the first value Arrow cannot convert, if any.

    The row writer checks Python types as values arrive; what is left for
    Arrow to refuse is the part it alone knows, such as a decimal with too
    many digits, so the message carries Arrow's reason.
    """
    try:
        pa.array(values, type=field.type)
    except ARROW_CONVERSION_ERRORS:
        pass
    else:
        return
    for offset, value in enumerate(values):
        try:
            pa.array([value], type=field.type)
        except ARROW_CONVERSION_ERRORS as exc:
            raise ColumnTypeError(
                f"column '{field.name}', row {first_row + offset}: Arrow cannot convert "
                f"{describe_value(value)} to {field.type}: {exc}"
            ) from exc
