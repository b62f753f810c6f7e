"""Checks shared by the result set loader tests."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from connect_plugin.scanning import ResultSetLoader, RowWriter


def buffer_bytes(batch: pa.RecordBatch) -> int:
    """Bytes in every buffer of every column of ``batch``, children included."""
    return sum(
        buffer.size for column in batch.columns for buffer in column.buffers() if buffer is not None
    )


def harvest(loader: ResultSetLoader) -> pa.RecordBatch:
    """Harvest, and check the batch is valid Arrow and within the loader's byte limit."""
    batch = loader.harvest()
    batch.validate(full=True)
    assert buffer_bytes(batch) <= loader.max_bytes
    return batch


def fill(writer: RowWriter, write: Callable[[RowWriter, int], None], start: int = 0) -> int:
    """Write rows ``start``, ``start + 1``, ... until the batch is full; return rows written."""
    number = start
    while not writer.is_full():
        writer.start_row()
        write(writer, number)
        writer.save_row()
        number += 1
    return number - start


def column(batch: pa.RecordBatch, name: str) -> list[object]:
    return batch.column(name).to_pylist()  # type: ignore[no-any-return]
