"""Bulk writes: many rows converted by Arrow at once, under the row path's limits.

A source that already holds rows (a parsed JSON array, a page from a
user-written reader) hands them over together. Arrow converts tuples in C,
one call per chunk; Python only screens the columns where Arrow's conversion
is laxer than the per-value rules (it truncates floats written to integer
columns, turns datetimes into dates, drops unknown struct keys), and falls
back to checking value by value when a screen fails, so both paths accept
and refuse the same values.

Chunks are sized from the bytes per row seen so far. When a chunk passes the
byte limit it is cut at the first row that does not fit, and that row becomes
the look-ahead row, as in the row path.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from connect_plugin.errors import ColumnNotFound, RowShapeError, ScanError
from connect_plugin.scanning.column_writers import (
    ColumnWriter,
    row_too_large,
    value_error,
    value_too_large,
)
from connect_plugin.scanning.harvest import ARROW_CONVERSION_ERRORS, locate_conversion_error
from connect_plugin.scanning.values import MISSING, ValueMismatch

if TYPE_CHECKING:
    from connect_plugin.scanning.row_writer import RowWriter

FIRST_CHUNK_ROWS = 64
"""Rows converted before the batch has told us how many bytes a row takes."""

MAX_CHUNK_ROWS = 4096
"""Rows per chunk at most, so the screens and Arrow's conversion find them still in cache."""


def write_rows(writer: RowWriter, rows: Sequence[Any], start: int) -> int:
    writer.prepare_bulk()
    end = len(rows)
    position = start
    while position < end and not writer.is_full():
        size = _chunk_size(writer, end - position)
        chunk = rows[position : position + size]
        if not isinstance(chunk, list):
            chunk = list(chunk)
        first = writer.open_row_number()
        arrays = _convert(writer, chunk, first)
        position += _commit(writer, chunk, arrays, first)
    return position - start


def _chunk_size(writer: RowWriter, remaining: int) -> int:
    count = writer.row_count
    limit = min(remaining, writer.max_rows - count, MAX_CHUNK_ROWS)
    if not count:
        return min(limit, FIRST_CHUNK_ROWS)
    available = writer.available()
    per_row = (writer.max_bytes - available) / count
    if per_row <= 0:
        return limit
    return max(1, min(limit, int(available / per_row) + 1))


def _projected(writer: RowWriter) -> list[ColumnWriter]:
    return [column for column in writer.columns if column.is_projected]


def _convert(writer: RowWriter, chunk: list[Any], first: int) -> list[pa.Array]:
    kinds = set(map(type, chunk))
    if kinds == {tuple}:
        return _from_tuples(writer, chunk, first)
    if all(issubclass(kind, Mapping) for kind in kinds):
        return _from_mappings(writer, chunk, first)
    tuples = [_as_tuple(writer, row, first + offset) for offset, row in enumerate(chunk)]
    return _from_tuples(writer, tuples, first)


def _as_tuple(writer: RowWriter, row: Any, number: int) -> tuple[Any, ...]:
    """One value per column, in column order; ``MISSING`` where a mapping has no key."""
    if isinstance(row, (tuple, list)):
        return tuple(row)
    if isinstance(row, Mapping):
        values: list[Any] = [MISSING] * writer.column_count
        for key, value in row.items():
            column = _resolve(writer, key, number)
            if values[column.position] is not MISSING:
                raise RowShapeError(
                    f"row {number} gives column '{column.name}' twice (keys differ only in case)"
                )
            values[column.position] = value
        return tuple(values)
    raise RowShapeError(
        f"row {number} is a {type(row).__name__}; write_rows() takes tuples with one value "
        "per column or mappings from column name to value"
    )


def _resolve(writer: RowWriter, key: Hashable, number: int) -> ColumnWriter:
    column = writer.lookup(key) if isinstance(key, str) else None
    if column is None:
        raise ColumnNotFound(
            f"row {number} has key {key!r}, which is not a column; add it with add_column() "
            "before writing rows that use it"
        )
    return column


def _from_tuples(writer: RowWriter, chunk: list[tuple[Any, ...]], first: int) -> list[pa.Array]:
    if writer.all_projected and writer.fields:
        arrays = _convert_as_struct(writer, chunk)
        if arrays is not None:
            return arrays
    columns = writer.columns
    width = len(columns)
    if set(map(len, chunk)) != {width}:
        for offset, row in enumerate(chunk):
            if len(row) != width:
                names = ", ".join(column.name for column in columns)
                raise RowShapeError(
                    f"row {first + offset} has {len(row)} values; write_rows() needs one per "
                    f"column, in the order they were added ({width}: {names})"
                )
    values = list(zip(*chunk, strict=True))
    return [
        column_array(column, list(values[position]), first)
        for position, column in enumerate(columns)
        if column.is_projected
    ]


def _convert_as_struct(writer: RowWriter, chunk: list[tuple[Any, ...]]) -> list[pa.Array] | None:
    """Arrow's one-call conversion, when the screens show it gives what the rules would."""
    rules = writer.rules
    try:
        for slot, column_rules in enumerate(rules):
            if column_rules.census is not None and not column_rules.screen(
                map(itemgetter(slot), chunk)
            ):
                return None
        struct = pa.array(chunk, type=writer.struct_type)
    except (IndexError, *ARROW_CONVERSION_ERRORS):
        return None
    arrays = [struct.field(slot) for slot in range(len(rules))]
    for column_rules, array in zip(rules, arrays, strict=True):
        if not column_rules.nullable and array.null_count:
            return None
    return arrays


def _from_mappings(writer: RowWriter, chunk: list[Mapping[Any, Any]], first: int) -> list[pa.Array]:
    keys_of: dict[int, list[Hashable]] = {}
    for key in set().union(*chunk):
        column = writer.lookup(key) if isinstance(key, str) else None
        if column is None:
            offset = next(offset for offset, row in enumerate(chunk) if key in row)
            column = _resolve(writer, key, first + offset)
        if column.is_projected:
            keys_of.setdefault(column.slot, []).append(key)
    arrays = []
    for column in _projected(writer):
        fill = None if column.rules.nullable else MISSING
        keys = keys_of.get(column.slot)
        if not keys:
            values: list[Any] = [fill] * len(chunk)
        elif len(keys) == 1:
            key = keys[0]
            values = [row.get(key, fill) for row in chunk]
        else:
            values = [
                _as_tuple(writer, row, first + offset)[column.position]
                for offset, row in enumerate(chunk)
            ]
        arrays.append(column_array(column, values, first))
    return arrays


def column_array(column: ColumnWriter, values: list[Any], first: int) -> pa.Array:
    """One column of a chunk as an array, checked by the same rules as ``set()``."""
    rules = column.rules
    arrow_type = column.field.type
    if rules.screen(values):
        try:
            return pa.array(values, type=arrow_type)
        except ARROW_CONVERSION_ERRORS:
            pass
    stored = []
    slot_value = rules.slot_value
    for offset, value in enumerate(values):
        try:
            stored.append(slot_value(value)[0])
        except ValueMismatch as exc:
            raise value_error(column.name, first + offset, exc) from None
    try:
        return pa.array(stored, type=arrow_type)
    except ARROW_CONVERSION_ERRORS as exc:
        locate_conversion_error(column.field, stored, first)
        raise ScanError(
            f"column '{column.name}': Arrow could not build rows {first}..: {exc}"
        ) from exc


def _commit(writer: RowWriter, chunk: list[Any], arrays: list[pa.Array], first: int) -> int:
    """Take as many rows of the chunk as fit; a row that does not becomes the look-ahead row."""
    rules = writer.rules
    count = writer.row_count
    available = writer.available()

    def need(rows: int, sliced: bool) -> int:
        variable = sum(
            column_rules.array_var_bytes(array.slice(0, rows) if sliced else array)
            for column_rules, array in zip(rules, arrays, strict=True)
        )
        return writer.fixed_span(count, rows) + variable

    total = len(chunk)
    whole = need(total, False)
    if whole <= available:
        writer.commit_arrays(arrays, total, whole)
        return total
    fits, fails = 0, total
    while fails - fits > 1:
        middle = (fits + fails) // 2
        if need(middle, True) <= available:
            fits = middle
        else:
            fails = middle
    lookahead, size = _lookahead_row(writer, chunk[fits], first + fits)
    if fits:
        prefix = [pa.concat_arrays([array.slice(0, fits)]) for array in arrays]
        writer.commit_arrays(prefix, fits, need(fits, True))
    writer.commit_lookahead(lookahead, size)
    return fits + 1


def _lookahead_row(writer: RowWriter, row: Any, number: int) -> tuple[tuple[Any, ...], int]:
    """Check and store the row that overflowed, as the row path would have."""
    values = _as_tuple(writer, row, number)
    columns = writer.columns
    if len(values) != len(columns):
        raise RowShapeError(
            f"row {number} has {len(values)} values; write_rows() needs one per column "
            f"({len(columns)})"
        )
    one_row = writer.one_row_bytes
    limit = writer.max_bytes
    stored = []
    total = 0
    for column, value in zip(columns, values, strict=True):
        if not column.is_projected:
            continue
        try:
            kept, size = column.rules.slot_value(value)
        except ValueMismatch as exc:
            raise value_error(column.name, number, exc) from None
        if size + one_row > limit:
            raise value_too_large(column.name, number, size, limit)
        stored.append(kept)
        total += size
    if one_row + total > limit:
        raise row_too_large(number, one_row + total, limit, "written by write_rows()")
    return tuple(stored), total
