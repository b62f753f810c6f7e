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
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from connect_plugin.errors import ConfigError, LoaderStateError
from connect_plugin.scanning.harvest import build_batch
from connect_plugin.scanning.loader_state import LoaderState
from connect_plugin.scanning.row_writer import RowWriter

DEFAULT_MAX_ROWS = 4096
MAX_ROWS_CEILING = 65536
DEFAULT_MAX_BYTES = 16 * 1024 * 1024


def clamp_rows(max_rows: int) -> int:
    """Row limits outside 1..65536 are brought inside, as Drill does."""
    return max(1, min(MAX_ROWS_CEILING, int(max_rows)))


class ResultSetLoader:
    """Builds Arrow record batches from rows under a row limit and a byte limit.

    ``schema`` lists columns known up front; readers may add more at any time
    with ``writer.add_column``. ``projection`` names the columns the query
    wants (``None`` for all, ``[]`` for none, as for ``COUNT(*)``); other
    columns get writers that discard. ``max_bytes`` bounds the Arrow buffer
    bytes of each harvested batch. ``state`` tells where the batch stands
    (``LoaderState``); only ``start_batch``, ``harvest`` and ``close`` and the
    writes of rows move it.
    """

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
        self._writer = RowWriter(projection, self._max_rows, int(max_bytes))
        self._batch_count = 0
        for field in schema or ():
            self._writer.add_column(field)

    @property
    def state(self) -> LoaderState:
        return self._writer.state

    @property
    def writer(self) -> RowWriter:
        """The row writer of this loader (one object for the loader's life)."""
        if self._writer.state is LoaderState.CLOSED:
            raise LoaderStateError("the loader is closed")
        return self._writer

    @property
    def max_rows(self) -> int:
        return self._max_rows

    @max_rows.setter
    def max_rows(self, value: int) -> None:
        """A new row limit applies from the next ``start_batch()``."""
        self._max_rows = clamp_rows(value)

    @property
    def max_bytes(self) -> int:
        return self._writer.max_bytes

    @property
    def schema_version(self) -> int:
        """Grows by one for each column added to the batch being built or last harvested.

        A column added after an overflow belongs to the next batch, so it
        counts from that batch's ``start_batch()`` on.
        """
        return self._writer.schema_version

    @property
    def row_count(self) -> int:
        """Rows in the batch being built, not counting a look-ahead row."""
        return self._writer.row_count

    @property
    def total_row_count(self) -> int:
        """Rows saved over the loader's life, including a look-ahead row."""
        writer = self._writer
        return writer.first_row + writer.row_count + writer.has_lookahead

    @property
    def batch_count(self) -> int:
        """Batches harvested so far."""
        return self._batch_count

    @property
    def is_projection_empty(self) -> bool:
        """Whether batches carry no columns (only row counts, as for ``COUNT(*)``)."""
        return not self._writer.fields

    @property
    def has_lookahead(self) -> bool:
        """Whether a row waits for the next batch."""
        return self._writer.has_lookahead

    def start_batch(self) -> None:
        """Begin a batch; it starts with the look-ahead row of the last batch, if any."""
        self._writer.begin_batch(self._max_rows)

    def harvest(self) -> pa.RecordBatch:
        """End the batch and return it; an open, unsaved row is dropped."""
        fields, rules, segments, count, first_row = self._writer.end_batch()
        self._batch_count += 1
        return build_batch(fields, rules, segments, count, first_row)

    def close(self) -> None:
        """Drop pending rows, including a look-ahead row; closing twice is harmless."""
        self._writer.close()

    def __enter__(self) -> ResultSetLoader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
