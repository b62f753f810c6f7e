"""The row writer: the reader's half of a result set loader.

The loader owns the batch and its state machine; the writer is what a
reader writes through: the row protocol (``start_row``, ``save_row``,
``is_full``), which the loader implements, and the columns, by name or by
position, with which of them the query projects, kept here. This column
bookkeeping reaches the batch only through ``RowBatch``, the small
interface below.

A loader is its own writer (``ResultSetLoader`` subclasses ``RowWriter``):
the row protocol runs every row, and a call reaching the state through a
second object, even a bound method stored on it, costs the per-value path
about 5 % in the loader benchmark.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Protocol

import pyarrow as pa

from connect_plugin.errors import ColumnNotFound, DuplicateColumn, LoaderStateError
from connect_plugin.scanning.loader import bulk
from connect_plugin.scanning.loader.bulk import BulkBatch
from connect_plugin.scanning.loader.column_writers import (
    ColumnWriter,
    DiscardWriter,
    RowRoom,
    make_column_writer,
)
from connect_plugin.scanning.loader.loader_state import LoaderState
from connect_plugin.scanning.loader.type_rules import rules_for
from connect_plugin.scanning.loader.values import ValueRules


class RowBatch(RowRoom, BulkBatch, Protocol):
    """What a row writer needs from its batch: what its column writers need
    (``RowRoom``), what its bulk path needs (``BulkBatch``), where the batch
    stands, and a slot for each projected column it adds."""

    @property
    def state(self) -> LoaderState: ...

    @property
    def row(self) -> list[Any]:
        """The open row's slots, one per projected column (the list itself, reused)."""

    def add_field(self, field: pa.Field, rules: ValueRules) -> int:
        """Give a projected column a slot in the batch and return it."""


class RowWriter(ABC):
    """Writes rows into the batch its ``ResultSetLoader`` is building.

    Protocol: ``start_row()``, ``column(name).set(value)`` for the columns the
    row has, ``save_row()``. Columns may be added at any time; rows written
    before a column existed read as null (or the type's empty value). A row
    started and not saved is dropped. ``write_rows()`` takes many rows at once
    under the same limits.

    The row protocol is abstract here: the loader implements it on the object
    that holds the batch. ``batch`` is where the columns get their slots; a
    ``ResultSetLoader`` passes itself.
    """

    __slots__ = ("_batch", "_by_key", "_by_name", "_columns", "_projection")

    def __init__(self, batch: RowBatch, projection: Sequence[str] | None) -> None:
        self._batch = batch
        self._projection = None if projection is None else {name.casefold() for name in projection}
        self._columns: list[ColumnWriter] = []
        self._by_name: dict[str, ColumnWriter] = {}
        self._by_key: dict[str, ColumnWriter] = {}

    @abstractmethod
    def start_row(self) -> None:
        """Open a new row; an open row that was not saved is dropped."""

    @abstractmethod
    def save_row(self) -> None:
        """Add the open row to the batch (or to the look-ahead batch after an overflow)."""

    @abstractmethod
    def is_full(self) -> bool:
        """Whether the batch takes no more rows; true as soon as a value overflows."""

    @property
    @abstractmethod
    def state(self) -> LoaderState:
        """Where the batch being built stands; only the loader's calls move it on."""

    @property
    @abstractmethod
    def row_count(self) -> int:
        """Rows saved in the batch being built, not counting a look-ahead row."""

    def write_rows(self, rows: Sequence[Any], start: int = 0) -> int:
        """Write ``rows[start:]`` until they run out or the batch fills; return how many were taken.

        Rows are tuples with one value per column in the order the columns
        were added (unprojected ones included), or mappings from column name
        to value where an absent key is an omitted value. A row that passes
        the byte limit moves to the look-ahead batch and counts as taken.
        When a row is refused, rows before it in the same call may already
        be in the batch; the error names the refused row's number, and
        ``loader.total_row_count`` tells how many rows were taken.
        """
        return bulk.write_rows(self._batch, self._columns, self.lookup, rows, start)

    def column(self, key: str | int) -> ColumnWriter:
        """The writer of a column, by name (case-insensitive) or by position."""
        if isinstance(key, int):
            if 0 <= key < len(self._columns):
                return self._columns[key]
            raise ColumnNotFound(
                f"no column at position {key}; the writer has {len(self._columns)} columns"
            )
        writer = self._by_name.get(key) or self._by_key.get(key.casefold())
        if writer is None:
            known = ", ".join(repr(column.name) for column in self._columns) or "none"
            raise ColumnNotFound(
                f"no column '{key}' (columns: {known}); add it with add_column() first"
            )
        return writer

    def lookup(self, key: str) -> ColumnWriter | None:
        """The writer of a column by name, exact spelling first, then without case."""
        return self._by_name.get(key) or self._by_key.get(key.casefold())

    def add_column(self, field: pa.Field) -> ColumnWriter:
        """Add a column and return its writer; adding an identical column again is a no-op."""
        batch = self._batch
        if batch.state is LoaderState.CLOSED:
            raise LoaderStateError("the loader is closed; no columns can be added")
        if not isinstance(field, pa.Field):
            raise TypeError(f"add_column() takes a pyarrow.Field, got {type(field).__name__}")
        key = field.name.casefold()
        existing = self._by_key.get(key)
        if existing is not None:
            same = existing.field
            if (
                same.name == field.name
                and same.type == field.type
                and same.nullable == field.nullable
            ):
                return existing
            raise DuplicateColumn(
                f"column '{field.name}' ({field.type}) clashes with column '{same.name}' "
                f"({existing.rules.describe()}); names are compared without case"
            )
        rules = rules_for(field)
        writer: ColumnWriter
        if self._projection is None or key in self._projection:
            slot = batch.add_field(field, rules)
            writer = make_column_writer(batch, field, rules, slot, batch.row)
        else:
            writer = DiscardWriter(batch, field, rules, -1, batch.row, projected=False)
        writer.position = len(self._columns)
        self._columns.append(writer)
        self._by_name[field.name] = writer
        self._by_key[key] = writer
        return writer

    @property
    def schema(self) -> pa.Schema:
        """The projected columns added so far, in the order of the output batches."""
        return pa.schema(self._batch.fields)

    @property
    def columns(self) -> list[ColumnWriter]:
        """Every column writer, projected or not, in the order the columns were added."""
        return list(self._columns)
