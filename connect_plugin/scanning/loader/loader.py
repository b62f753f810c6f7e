"""The result set loader: rows in, well-sized Arrow record batches out.

Readers that produce rows (formats the native Arrow readers cannot parse,
messy JSON, user-written readers) write through ``loader.writer`` and never
stop in the middle of a row: a batch is full after ``max_rows`` rows or when
its Arrow buffers would pass ``max_bytes``, and the row being written at that
moment moves whole to the next batch. This is Apache Drill's ResultSetLoader
rethought for Arrow: values wait in Python lists and become arrays once, at
harvest.

Batch protocol::

    loader.start_batch()
    while not loader.writer.is_full() and reader.has_more():
        ...write a row...
    batch = loader.harvest()

At the end of the input, a row may still wait in the look-ahead batch
(``loader.has_lookahead``): one more ``start_batch()`` and ``harvest()``
deliver it.

As Drill's ResultSetLoaderImpl owns its State, the loader owns the batch
and every move of its state machine (``LoaderState``): the batch's rows, the
room left under the byte limit, the look-ahead row and the layout of the
projected columns. ``RowWriter`` is the reader's half: the row protocol,
which the loader implements, and the columns by name, which reach the batch
through ``RowBatch``; column writers charge values against ``room``
(``RowRoom``), and a bulk write commits through three transitions
(``BulkBatch``). The loader is its own writer, so a row's calls land on the
object that holds the state.

Rows are written into one reusable slot list, and ``save_row`` copies it
into the batch as a tuple. ``room`` holds the bytes the open row may still
use: the byte limit minus everything committed and minus the fixed-width
part of the open row, reserved when the previous row was saved. A
fixed-width value therefore costs nothing to account for, and a
variable-width value one subtraction.

When a value takes the room below zero in the middle of row n, row n becomes
the look-ahead row: the batch freezes at rows 0..n-1 and the columns it has,
while the rest of row n, and any column added from then on, go to the next
batch. Only a value, or a row, that could not fit even an empty batch is an
error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from connect_plugin.errors import (
    BatchFull,
    ConfigError,
    LoaderStateError,
    MissingValue,
    RowTooLarge,
)
from connect_plugin.scanning.loader.column_writers import (
    ColumnWriter,
    row_too_large,
    value_too_large,
)
from connect_plugin.scanning.loader.harvest import ArraySegment, RowSegment, Segment, build_batch
from connect_plugin.scanning.loader.loader_state import LoaderState
from connect_plugin.scanning.loader.row_writer import RowWriter
from connect_plugin.scanning.loader.values import NO_EMPTY, ValueRules, bitmap_bytes

DEFAULT_MAX_ROWS = 4096
MAX_ROWS_CEILING = 65536
DEFAULT_MAX_BYTES = 16 * 1024 * 1024

_ACTIVE = LoaderState.ACTIVE
_OVERFLOW = LoaderState.OVERFLOW
_FULL_BATCH = LoaderState.FULL_BATCH


def clamp_rows(max_rows: int) -> int:
    """Row limits outside 1..65536 are brought inside, as Drill does."""
    return max(1, min(MAX_ROWS_CEILING, int(max_rows)))


class ResultSetLoader(RowWriter):
    """Builds Arrow record batches from rows under a row limit and a byte limit.

    ``schema`` lists columns known up front; readers may add more at any time
    with ``writer.add_column``. ``projection`` names the columns the query
    wants (``None`` for all, ``[]`` for none, as for ``COUNT(*)``); other
    columns get writers that discard. ``max_bytes`` bounds the Arrow buffer
    bytes of each harvested batch. ``state`` tells where the batch stands
    (``LoaderState``); only ``start_batch``, ``harvest`` and ``close`` and the
    writes of rows move it.
    """

    __slots__ = (
        "_base_room",
        "_batch_count",
        "_batch_max_rows",
        "_bitmaps",
        "_constant",
        "_count",
        "_fields",
        "_first_row",
        "_frozen",
        "_lookahead",
        "_lookahead_base",
        "_lookahead_var",
        "_max_bytes",
        "_max_rows",
        "_pending_versions",
        "_row",
        "_row_open",
        "_rows",
        "_rows_width",
        "_rules",
        "_segments",
        "_slow_save",
        "_state",
        "_struct_type",
        "_template",
        "_unset_slots",
        "_version",
        "_width",
        "room",
    )

    def __init__(
        self,
        schema: pa.Schema | None = None,
        *,
        projection: Sequence[str] | None = None,
        max_rows: int = DEFAULT_MAX_ROWS,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if max_bytes < 1:
            raise ConfigError(f"max_bytes must be a positive number of bytes, got {max_bytes}")
        self._max_rows = clamp_rows(max_rows)
        self._batch_max_rows = self._max_rows
        self._max_bytes = int(max_bytes)
        self._fields: list[pa.Field] = []
        self._rules: list[ValueRules] = []
        self._struct_type = pa.struct([])
        self._row: list[Any] = []
        self._template: list[Any] = []
        self._unset_slots: list[int] = []
        self._width = 0
        self._bitmaps = 0
        self._constant = 0
        self._state = LoaderState.START
        self._row_open = False
        self._slow_save = False
        self._frozen: int | None = None
        self._count = 0
        self._rows: list[tuple[Any, ...]] = []
        self._rows_width = 0
        self._segments: list[Segment] = []
        self.room = 0
        """Bytes the open row may still use; column writers charge values against it."""
        self._base_room = 0
        self._lookahead: tuple[Any, ...] | None = None
        self._lookahead_var = 0
        self._lookahead_base = 0
        self._first_row = 0
        self._version = 0
        self._pending_versions = 0
        self._batch_count = 0
        super().__init__(self, projection)
        for field in schema or ():
            self.add_column(field)

    # What readers ask the loader ---------------------------------------

    @property
    def state(self) -> LoaderState:
        return self._state

    @property
    def writer(self) -> RowWriter:
        """The row writer of this loader: the loader itself, seen as its ``RowWriter``."""
        if self._state is LoaderState.CLOSED:
            raise LoaderStateError("the loader is closed")
        return self

    @property
    def max_rows(self) -> int:
        return self._max_rows

    @max_rows.setter
    def max_rows(self, value: int) -> None:
        """A new row limit applies from the next ``start_batch()``."""
        self._max_rows = clamp_rows(value)

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @property
    def schema_version(self) -> int:
        """Grows by one for each column added to the batch being built or last harvested.

        A column added after an overflow belongs to the next batch, so it
        counts from that batch's ``start_batch()`` on.
        """
        return self._version

    @property
    def row_count(self) -> int:
        """Rows in the batch being built, not counting a look-ahead row."""
        return self._count

    @property
    def total_row_count(self) -> int:
        """Rows saved over the loader's life, including a look-ahead row."""
        return self._first_row + self._count + (self._lookahead is not None)

    @property
    def batch_count(self) -> int:
        """Batches harvested so far."""
        return self._batch_count

    @property
    def is_projection_empty(self) -> bool:
        """Whether batches carry no columns (only row counts, as for ``COUNT(*)``)."""
        return not self._fields

    @property
    def has_lookahead(self) -> bool:
        """Whether a row waits for the next batch."""
        return self._lookahead is not None

    # Batch transitions -------------------------------------------------

    def start_batch(self) -> None:
        """Begin a batch; it starts with the look-ahead row of the last batch, if any.

        START, HARVESTED or LOOK_AHEAD to ACTIVE (FULL_BATCH if the waiting
        row fills it).
        """
        if self._state is LoaderState.CLOSED:
            raise LoaderStateError("the loader is closed")
        if self._state.in_batch:
            raise LoaderStateError("a batch is in progress; call harvest() before start_batch()")
        max_rows = self._batch_max_rows = self._max_rows
        self._frozen = None
        self._segments = []
        self._rows = []
        self._rows_width = len(self._fields)
        self._version += self._pending_versions
        self._pending_versions = 0
        room = self._max_bytes - self._constant - self._width - self._bitmaps
        count = 0
        lookahead = self._lookahead
        if lookahead is not None:
            if len(lookahead) < len(self._template):
                lookahead += tuple(self._template[len(lookahead) :])
            self._rows.append(lookahead)
            count = 1
            room -= self._lookahead_var + self._reservation(1)
            self._lookahead = None
            self._lookahead_var = 0
        self._count = count
        self.room = self._base_room = room
        self._state = _FULL_BATCH if count >= max_rows or room < 0 else _ACTIVE
        self._slow_save = bool(self._unset_slots)

    def harvest(self) -> pa.RecordBatch:
        """End the batch and return it; an open, unsaved row is dropped.

        The state moves to HARVESTED, or to LOOK_AHEAD when a row waits.
        """
        if self._state is LoaderState.CLOSED:
            raise LoaderStateError("the loader is closed")
        if not self._state.in_batch:
            raise LoaderStateError("harvest() needs a batch in progress; call start_batch() first")
        self._row_open = False
        segments = self._segments
        if self._rows:
            segments.append(RowSegment(self._rows_width, self._rows))
        width = len(self._fields) if self._frozen is None else self._frozen
        count = self._count
        first = self._first_row
        self._first_row += count
        self._state = LoaderState.HARVESTED if self._lookahead is None else LoaderState.LOOK_AHEAD
        self._frozen = None
        self._count = 0
        self._segments = []
        self._rows = []
        self._batch_count += 1
        return build_batch(self._fields[:width], self._rules[:width], segments, count, first)

    def close(self) -> None:
        """Drop pending rows, including a look-ahead row; closing twice is harmless."""
        self._state = LoaderState.CLOSED
        self._row_open = False
        self._segments = []
        self._rows = []
        self._lookahead = None

    def __enter__(self) -> ResultSetLoader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # Row transitions: the row protocol of the loader's writer ----------

    def start_row(self) -> None:
        """Open a new row; an open row that was not saved is dropped."""
        if self._state is not _ACTIVE:
            self._refuse_start()
        self._row[:] = self._template
        self.room = self._base_room
        self._row_open = True

    def save_row(self) -> None:
        """Add the open row to the batch (or to the look-ahead batch after an overflow)."""
        if not self._row_open:
            self._refuse_save()
        if self._slow_save and self._save_specially():
            return
        self._rows.append(tuple(self._row))
        self._row_open = False
        count = self._count + 1
        self._count = count
        room = self.room - self._width
        if not count & 7:
            room -= self._bitmaps
        self._base_room = room
        if count >= self._batch_max_rows or room < 0:
            self._state = _FULL_BATCH

    def is_full(self) -> bool:
        """Whether the batch takes no more rows; true as soon as a value overflows."""
        return self._state is _FULL_BATCH or self._state is _OVERFLOW

    def open_row_number(self) -> int:
        """Number of the open row, counting saved rows of all batches from 0."""
        return self._first_row + self._count

    def overflow(self, column: ColumnWriter, size: int) -> None:
        """The room went negative writing ``size`` bytes to ``column``: overflow, or refuse."""
        one_row = self._constant + self._width + self._bitmaps
        if not self._row_open:
            self.room += size
            raise LoaderStateError(
                f"column '{column.name}' was set outside a row; call start_row() first"
            )
        if size + one_row > self._max_bytes:
            self.room += size
            raise value_too_large(column.name, self.open_row_number(), size, self._max_bytes)
        row_var = (self._lookahead_base if self._state is _OVERFLOW else self._base_room) - self.room
        if one_row + row_var > self._max_bytes:
            self.room += size
            raise row_too_large(
                self.open_row_number(),
                one_row + row_var,
                self._max_bytes,
                f"the limit was passed writing column '{column.name}'",
            )
        self._state = _OVERFLOW
        self._slow_save = True
        self._frozen = len(self._fields)
        self._lookahead_base = self._max_bytes - one_row
        self.room = self._lookahead_base - row_var

    def _save_specially(self) -> bool:
        """Check gaps without an empty value; save a look-ahead row. True when it saved."""
        row = self._row
        for slot in self._unset_slots:
            if row[slot] is NO_EMPTY:
                field = self._fields[slot]
                raise MissingValue(
                    f"column '{field.name}' ({self._rules[slot].describe()}) has no value in "
                    f"row {self.open_row_number()} and its type has no empty value; set it "
                    "before save_row() or make the column nullable"
                )
        if self._state is not _OVERFLOW:
            return False
        self._lookahead = tuple(row)
        self._lookahead_var = self._lookahead_base - self.room
        self._row_open = False
        return True

    def _refuse_start(self) -> None:
        if self._state is LoaderState.CLOSED:
            raise LoaderStateError("the loader is closed")
        if not self._state.in_batch:
            raise LoaderStateError(
                "start_row() needs a batch in progress; call loader.start_batch() first"
            )
        if self._state is _OVERFLOW:
            reason = f"row {self.open_row_number()} overflowed max_bytes={self._max_bytes}"
        elif self._count >= self._batch_max_rows:
            reason = f"it holds max_rows={self._batch_max_rows} rows"
        else:
            reason = f"it reached max_bytes={self._max_bytes}"
        raise BatchFull(
            f"the batch is full ({reason}); call loader.harvest() and loader.start_batch() "
            "before starting another row"
        )

    def _refuse_save(self) -> None:
        if self._state is LoaderState.CLOSED:
            raise LoaderStateError("the loader is closed")
        if not self._state.in_batch:
            raise LoaderStateError("save_row() needs a batch in progress and an open row")
        raise LoaderStateError("save_row() without an open row; call start_row() first")

    # The projected columns' layout -------------------------------------

    @property
    def row(self) -> list[Any]:
        """The open row's slots, one per projected column (the list itself, reused)."""
        return self._row

    @property
    def fields(self) -> list[pa.Field]:
        """The projected fields, in slot order (the list itself: do not change it)."""
        return self._fields

    @property
    def rules(self) -> list[ValueRules]:
        """The value rules of the projected fields, in slot order (the list itself)."""
        return self._rules

    @property
    def struct_type(self) -> pa.StructType:
        """A struct of the projected fields: one ``pyarrow.array`` call converts whole rows."""
        return self._struct_type

    def add_field(self, field: pa.Field, rules: ValueRules) -> int:
        """Give a projected column a slot and return it.

        In a batch that has not overflowed the column joins the batch, its
        earlier rows back-filled; when the batch has no room for it, or after
        an overflow, it belongs to the next batch, and an open row moves there.
        """
        one_row = rules.fixed_bytes(1)
        next_fixed = self._constant + self._width + self._bitmaps + one_row
        if next_fixed > self._max_bytes:
            raise RowTooLarge(
                f"adding column '{field.name}' makes an empty row need {next_fixed} bytes, "
                f"more than a whole batch may hold (max_bytes={self._max_bytes})"
            )
        default = rules.default()
        backfill = (
            self._count
            if self._state.in_batch and self._frozen is None
            else int(self._lookahead is not None)
        )
        if default is NO_EMPTY and backfill:
            raise MissingValue(
                f"column '{field.name}' ({rules.describe()}) cannot be added after {backfill} "
                "row(s) of its batch were written: its type has no empty value to back-fill "
                "them; add it before the first row or make it nullable"
            )
        joins = self._state.in_batch and self._frozen is None
        freeze = False
        delta = 0
        if joins:
            delta = (
                rules.fixed_bytes(self._count)
                + rules.width
                + (0 if self._count & 7 else rules.bitmaps)
            )
            if (self.room if self._row_open else self._base_room) < delta:
                joins, freeze = False, True
        row_var = 0
        moves = self._row_open and (self._state is _OVERFLOW or freeze)
        if moves:
            row_var = (self._lookahead_base if self._state is _OVERFLOW else self._base_room) - self.room
            if next_fixed + row_var > self._max_bytes:
                raise row_too_large(
                    self.open_row_number(),
                    next_fixed + row_var,
                    self._max_bytes,
                    f"adding column '{field.name}' passed the limit",
                )
        elif (
            not joins
            and self._lookahead is not None
            and (next_fixed + self._lookahead_var > self._max_bytes)
        ):
            raise row_too_large(
                self._first_row + self._count,
                next_fixed + self._lookahead_var,
                self._max_bytes,
                f"it waits for the next batch, and adding column '{field.name}' passed the limit",
            )
        if freeze:
            self._frozen = len(self._fields)
            self._slow_save = True
            self._state = _OVERFLOW if self._row_open else _FULL_BATCH
        if joins:
            self.room -= delta
            self._base_room -= delta
            self._version += 1
            if self._rows:
                self._segments.append(RowSegment(self._rows_width, self._rows))
                self._rows = []
            self._rows_width = len(self._fields) + 1
        else:
            self._pending_versions += 1
            if moves:
                self._lookahead_base = self._max_bytes - next_fixed
                self.room = self._lookahead_base - row_var
        slot = len(self._fields)
        self._fields.append(field)
        self._rules.append(rules)
        self._struct_type = pa.struct(self._fields)
        self._row.append(default)
        self._template.append(default)
        if default is NO_EMPTY:
            self._unset_slots.append(slot)
            self._slow_save = True
        self._width += rules.width
        self._bitmaps += rules.bitmaps
        self._constant += rules.constant
        return slot

    # Bulk writes: the room they may take, and their transitions --------

    @property
    def batch_max_rows(self) -> int:
        """The row limit of the batch being built (``max_rows`` applies from the next one)."""
        return self._batch_max_rows

    @property
    def one_row_bytes(self) -> int:
        """Fixed bytes a row needs in an empty batch, before its variable-width values."""
        return self._constant + self._width + self._bitmaps

    def _reservation(self, count: int) -> int:
        """Fixed bytes that row number ``count`` of the batch adds."""
        return self._width + (0 if count & 7 else self._bitmaps)

    def fixed_span(self, count: int, rows: int) -> int:
        """Fixed bytes that rows ``count``..``count+rows-1`` of the batch add."""
        return rows * self._width + self._bitmaps * (
            bitmap_bytes(count + rows) - bitmap_bytes(count)
        )

    def available(self) -> int:
        """Bytes left in the batch before reserving the next row."""
        return self._base_room + self._reservation(self._count)

    def prepare_bulk(self) -> None:
        """Check that a bulk write may add rows now; it closes an open row."""
        if self._state is not _ACTIVE:
            if not self._state.in_batch:
                raise LoaderStateError(
                    "write_rows() needs a batch in progress; call loader.start_batch() first"
                )
            self._refuse_start()
        self._row_open = False

    def commit_arrays(self, arrays: list[pa.Array], rows: int, size: int) -> None:
        """Add ``rows`` bulk-built rows that need ``size`` bytes of the room left."""
        if self._rows:
            self._segments.append(RowSegment(self._rows_width, self._rows))
            self._rows = []
        self._segments.append(ArraySegment(len(self._fields), arrays, rows))
        available = self.available() - size
        count = self._count + rows
        self._count = count
        self._base_room = self.room = available - self._reservation(count)
        if count >= self._batch_max_rows or self._base_room < 0:
            self._state = _FULL_BATCH

    def commit_lookahead(self, row: tuple[Any, ...], size: int) -> None:
        """Make a bulk row that did not fit the look-ahead row; the caller checked its size."""
        self._lookahead = row
        self._lookahead_var = size
        self._state = _OVERFLOW
        self._slow_save = True
        self._frozen = len(self._fields)
