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

The batch is reached through ``BulkBatch``, the few reads and the three
transitions a bulk write needs from the loader; the columns come as plain
arguments (the writers in the order they were added, and a name lookup).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Protocol

import pyarrow as pa

from connect_plugin.errors import ColumnNotFound, RowShapeError, ScanError
from connect_plugin.scanning.loader.column_writers import (
    ColumnWriter,
    row_too_large,
    value_error,
    value_too_large,
)
from connect_plugin.scanning.loader.harvest import ARROW_CONVERSION_ERRORS, locate_conversion_error
from connect_plugin.scanning.loader.values import MISSING, ValueMismatch, ValueRules

FIRST_CHUNK_ROWS = 64
"""Rows converted before the batch has told us how many bytes a row takes."""

MAX_CHUNK_ROWS = 4096
"""Rows per chunk at most, so the screens and Arrow's conversion find them still in cache."""

Lookup = Callable[[str], ColumnWriter | None]
"""A column's writer by name, exact spelling first, then without case."""


class BulkBatch(Protocol):
    """What a bulk write needs from the batch being built."""

    @property
    def row_count(self) -> int:
        """Rows saved in the batch being built, not counting a look-ahead row."""

    @property
    def batch_max_rows(self) -> int:
        """The row limit of the batch being built."""

    @property
    def max_bytes(self) -> int: ...

    @property
    def fields(self) -> list[pa.Field]:
        """The projected fields, in slot order."""

    @property
    def rules(self) -> list[ValueRules]:
        """The value rules of the projected fields, in slot order."""

    @property
    def struct_type(self) -> pa.StructType:
        """A struct of the projected fields: one ``pyarrow.array`` call converts whole rows."""

    @property
    def one_row_bytes(self) -> int:
        """Fixed bytes a row needs in an empty batch, before its variable-width values."""

    def is_full(self) -> bool: ...

    def open_row_number(self) -> int: ...

    def available(self) -> int:
        """Bytes left in the batch before reserving the next row."""

    def fixed_span(self, count: int, rows: int) -> int:
        """Fixed bytes that rows ``count``..``count+rows-1`` of the batch add."""

    def prepare_bulk(self) -> None:
        """Check that a bulk write may add rows now; it closes an open row."""

    def commit_arrays(self, arrays: list[pa.Array], rows: int, size: int) -> None:
        """Add ``rows`` bulk-built rows that need ``size`` bytes of the room left."""

    def commit_lookahead(self, row: tuple[Any, ...], size: int) -> None:
        """Make a row that did not fit the look-ahead row; the caller checked its size."""


def write_rows(
    batch: BulkBatch,
    columns: Sequence[ColumnWriter],
    lookup: Lookup,
    rows: Sequence[Any],
    start: int,
) -> int:
    """Write ``rows[start:]`` until they run out or the batch fills; return how many were taken.

    ``columns`` are every column's writer, projected or not, in the order
    they were added; ``lookup`` finds one by name.
    """
    batch.prepare_bulk()
    end = len(rows)
    position = start
    while position < end and not batch.is_full():
        size = _chunk_size(batch, end - position)
        chunk = rows[position : position + size]
        if not isinstance(chunk, list):
            chunk = list(chunk)
        first = batch.open_row_number()
        arrays = _convert(batch, columns, lookup, chunk, first)
        position += _commit(batch, columns, lookup, chunk, arrays, first)
    return position - start


def _chunk_size(batch: BulkBatch, remaining: int) -> int:
    count = batch.row_count
    limit = min(remaining, batch.batch_max_rows - count, MAX_CHUNK_ROWS)
    if not count:
        return min(limit, FIRST_CHUNK_ROWS)
    available = batch.available()
    per_row = (batch.max_bytes - available) / count
    if per_row <= 0:
        return limit
    return max(1, min(limit, int(available / per_row) + 1))


def _convert(
    batch: BulkBatch,
    columns: Sequence[ColumnWriter],
    lookup: Lookup,
    chunk: list[Any],
    first: int,
) -> list[pa.Array]:
    kinds = set(map(type, chunk))
    if kinds == {tuple}:
        return _from_tuples(batch, columns, chunk, first)
    if all(issubclass(kind, Mapping) for kind in kinds):
        return _from_mappings(columns, lookup, chunk, first)
    tuples = [_as_tuple(columns, lookup, row, first + offset) for offset, row in enumerate(chunk)]
    return _from_tuples(batch, columns, tuples, first)


def _as_tuple(
    columns: Sequence[ColumnWriter], lookup: Lookup, row: Any, number: int
) -> tuple[Any, ...]:
    """One value per column, in column order; ``MISSING`` where a mapping has no key."""
    if isinstance(row, (tuple, list)):
        return tuple(row)
    if isinstance(row, Mapping):
        values: list[Any] = [MISSING] * len(columns)
        for key, value in row.items():
            column = _resolve(lookup, key, number)
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


def _resolve(lookup: Lookup, key: Hashable, number: int) -> ColumnWriter:
    column = lookup(key) if isinstance(key, str) else None
    if column is None:
        raise ColumnNotFound(
            f"row {number} has key {key!r}, which is not a column; add it with add_column() "
            "before writing rows that use it"
        )
    return column


def _from_tuples(
    batch: BulkBatch, columns: Sequence[ColumnWriter], chunk: list[tuple[Any, ...]], first: int
) -> list[pa.Array]:
    width = len(columns)
    if width and len(batch.fields) == width:
        arrays = _convert_as_struct(batch, chunk)
        if arrays is not None:
            return arrays
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


def _convert_as_struct(batch: BulkBatch, chunk: list[tuple[Any, ...]]) -> list[pa.Array] | None:
    """Arrow's one-call conversion, when every column is projected and the screens show it
    gives what the rules would."""
    rules = batch.rules
    try:
        for slot, column_rules in enumerate(rules):
            if column_rules.census is not None and not column_rules.screen(
                map(itemgetter(slot), chunk)
            ):
                return None
        struct = pa.array(chunk, type=batch.struct_type)
    except (IndexError, *ARROW_CONVERSION_ERRORS):
        return None
    arrays = [struct.field(slot) for slot in range(len(rules))]
    for column_rules, array in zip(rules, arrays, strict=True):
        if not column_rules.nullable and array.null_count:
            return None
    return arrays


def _from_mappings(
    columns: Sequence[ColumnWriter], lookup: Lookup, chunk: list[Mapping[Any, Any]], first: int
) -> list[pa.Array]:
    keys_of: dict[int, list[Hashable]] = {}
    for key in set().union(*chunk):
        column = lookup(key) if isinstance(key, str) else None
        if column is None:
            offset = next(offset for offset, row in enumerate(chunk) if key in row)
            column = _resolve(lookup, key, first + offset)
        if column.is_projected:
            keys_of.setdefault(column.slot, []).append(key)
    arrays = []
    for column in columns:
        if not column.is_projected:
            continue
        fill = None if column.rules.nullable else MISSING
        keys = keys_of.get(column.slot)
        if not keys:
            values: list[Any] = [fill] * len(chunk)
        elif len(keys) == 1:
            key = keys[0]
            values = [row.get(key, fill) for row in chunk]
        else:
            values = [
                _as_tuple(columns, lookup, row, first + offset)[column.position]
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


def _commit(
    batch: BulkBatch,
    columns: Sequence[ColumnWriter],
    lookup: Lookup,
    chunk: list[Any],
    arrays: list[pa.Array],
    first: int,
) -> int:
    """Take as many rows of the chunk as fit; a row that does not becomes the look-ahead row."""
    rules = batch.rules
    count = batch.row_count
    available = batch.available()

    def need(rows: int, sliced: bool) -> int:
        variable = sum(
            column_rules.array_var_bytes(array.slice(0, rows) if sliced else array)
            for column_rules, array in zip(rules, arrays, strict=True)
        )
        return batch.fixed_span(count, rows) + variable

    total = len(chunk)
    whole = need(total, False)
    if whole <= available:
        batch.commit_arrays(arrays, total, whole)
        return total
    fits, fails = 0, total
    while fails - fits > 1:
        middle = (fits + fails) // 2
        if need(middle, True) <= available:
            fits = middle
        else:
            fails = middle
    lookahead, size = _lookahead_row(batch, columns, lookup, chunk[fits], first + fits)
    if fits:
        prefix = [pa.concat_arrays([array.slice(0, fits)]) for array in arrays]
        batch.commit_arrays(prefix, fits, need(fits, True))
    batch.commit_lookahead(lookahead, size)
    return fits + 1


def _lookahead_row(
    batch: BulkBatch, columns: Sequence[ColumnWriter], lookup: Lookup, row: Any, number: int
) -> tuple[tuple[Any, ...], int]:
    """Check and store the row that overflowed, as the row path would have."""
    values = _as_tuple(columns, lookup, row, number)
    if len(values) != len(columns):
        raise RowShapeError(
            f"row {number} has {len(values)} values; write_rows() needs one per column "
            f"({len(columns)})"
        )
    one_row = batch.one_row_bytes
    limit = batch.max_bytes
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
