"""Row and byte limits of the result set loader."""

from __future__ import annotations

import pyarrow as pa
import pytest

from connect_plugin.errors import BatchFull, LoaderStateError
from connect_plugin.scanning import ResultSetLoader, RowWriter
from tests.unit.scanning.loader.loader_checks import buffer_bytes, fill, harvest

VALUE = "X" * 200


def write_value(writer: RowWriter, number: int) -> None:
    writer.column(0).set(VALUE)


def string_loader(max_rows: int = 4096, max_bytes: int = 16 * 1024 * 1024) -> ResultSetLoader:
    schema = pa.schema([pa.field("s", pa.string(), nullable=False)])
    return ResultSetLoader(schema, max_rows=max_rows, max_bytes=max_bytes)


def test_row_limit() -> None:
    """Drill TestResultSetLoaderLimits.testRowLimit: the batch stops at the row limit, no look-ahead."""
    loader = string_loader()
    writer = loader.writer
    loader.start_batch()
    assert fill(writer, write_value) == 4096
    assert writer.row_count == 4096
    assert not loader.has_lookahead
    assert harvest(loader).num_rows == 4096

    loader.start_batch()
    assert writer.row_count == 0
    count = 0
    while not writer.is_full():
        writer.start_row()
        writer.column("s").set(VALUE)
        writer.save_row()
        count += 1
    assert count == 4096
    assert harvest(loader).num_rows == 4096


def test_custom_row_limit() -> None:
    """Drill TestResultSetLoaderLimits.testCustomRowLimit: limits are clamped to 1..65536."""
    assert string_loader(max_rows=65537).max_rows == 65536
    assert string_loader(max_rows=0).max_rows == 1
    assert string_loader(max_rows=-5).max_rows == 1
    loader = string_loader(max_rows=1024)
    assert loader.max_rows == 1024
    writer = loader.writer
    loader.start_batch()
    assert fill(writer, write_value) == 1024
    with pytest.raises(BatchFull, match="harvest"):
        writer.start_row()
    with pytest.raises(LoaderStateError, match="start_row"):
        writer.save_row()
    harvest(loader)
    loader.start_batch()
    assert writer.row_count == 0


def test_dynamic_limit() -> None:
    """Drill TestResultSetLoaderLimits.testDynamicLimit: the row limit may change between batches."""
    loader = string_loader(max_rows=1024)
    writer = loader.writer
    for limit in (1024, 8000, 1000):
        loader.max_rows = limit
        loader.start_batch()
        assert fill(writer, write_value) == limit
        assert harvest(loader).num_rows == limit
    loader.max_rows = -3
    assert loader.max_rows == 1
    loader.max_rows = 2**31
    assert loader.max_rows == 65536


def test_limit_change_waits_for_next_batch() -> None:
    loader = string_loader(max_rows=10)
    writer = loader.writer
    loader.start_batch()
    loader.max_rows = 3
    assert fill(writer, write_value) == 10
    harvest(loader)
    loader.start_batch()
    assert fill(writer, write_value) == 3


def test_single_row_batches() -> None:
    """Drill TestResultSetLoaderLimits.testLimit1, for the per-batch row limit: one row each."""
    loader = string_loader(max_rows=1)
    writer = loader.writer
    for number in range(3):
        loader.start_batch()
        writer.start_row()
        writer.column(0).set(f"row {number}")
        writer.save_row()
        assert writer.is_full()
        with pytest.raises(BatchFull):
            writer.start_row()
        assert harvest(loader).column(0).to_pylist() == [f"row {number}"]


@pytest.mark.parametrize(
    ("arrow_type", "value"),
    [
        (pa.int64(), 7),
        (pa.int8(), 7),
        (pa.bool_(), True),
        (pa.float32(), 1.5),
        (pa.string(), "seven"),
        (pa.large_string(), "seven"),
        (pa.binary(), b"seven"),
        (pa.list_(pa.int32()), [1, 2, 3]),
        (pa.list_(pa.string()), ["a", "bb", None]),
        (pa.large_list(pa.list_(pa.int64())), [[1], [], [2, 3]]),
        (pa.struct([("x", pa.int16()), ("y", pa.string())]), {"x": 1, "y": "why"}),
        (pa.map_(pa.string(), pa.int64()), {"k": 1, "l": 2}),
        (pa.list_(pa.struct([("x", pa.string())])), [{"x": "a"}, {"x": None}]),
        (pa.list_(pa.float64(), 3), [1.0, 2.0, 3.0]),
    ],
)
def test_byte_limit_holds_for_every_type(arrow_type: pa.DataType, value: object) -> None:
    """A byte-limited batch never holds more Arrow buffer bytes than max_bytes."""
    loader = ResultSetLoader(pa.schema([("v", arrow_type), ("n", pa.int32())]), max_bytes=4000)
    writer = loader.writer
    for _ in range(3):
        loader.start_batch()

        def write(writer: RowWriter, number: int) -> None:
            writer.column("v").set(None if number % 5 == 4 else value)
            writer.column("n").set(number)

        fill(writer, write)
        batch = harvest(loader)
        assert batch.num_rows > 0
        assert buffer_bytes(batch) <= 4000


def test_byte_limit_uses_most_of_the_budget() -> None:
    """The estimate is an upper bound but not a loose one: batches come out close to the limit."""
    loader = string_loader(max_bytes=1 << 20, max_rows=65536)
    loader.start_batch()
    fill(loader.writer, write_value)
    batch = harvest(loader)
    assert (1 << 20) * 0.98 < buffer_bytes(batch) <= 1 << 20


def test_byte_limit_with_fixed_width_columns_only() -> None:
    """Fixed-width columns reach the byte limit at a row boundary, with no look-ahead row."""
    loader = ResultSetLoader(pa.schema([("a", pa.int64()), ("b", pa.float64())]), max_bytes=1000)
    writer = loader.writer
    loader.start_batch()

    def write(writer: RowWriter, number: int) -> None:
        writer.column(0).set(number)
        writer.column(1).set(number / 2)

    rows = fill(writer, write)
    assert not loader.has_lookahead
    batch = harvest(loader)
    assert batch.num_rows == rows
    assert 900 < buffer_bytes(batch) <= 1000
