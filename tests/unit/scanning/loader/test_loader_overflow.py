"""Overflow: the row that passes the byte limit moves whole to the look-ahead batch."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pytest

from connect_plugin.errors import BatchFull, RowTooLarge, ValueTooLarge
from connect_plugin.scanning import ResultSetLoader, RowWriter
from tests.unit.scanning.loader.loader_checks import buffer_bytes, fill, harvest

LIMIT = 64 * 1024
VALUE = "X" * 512


def rows_that_fit(row_bytes: int, constant: int, bitmaps: int) -> int:
    """Rows of a one-column batch the loader's accounting admits under LIMIT."""
    rows = 0
    while constant + (rows + 1) * row_bytes + bitmaps * ((rows + 8) // 8) <= LIMIT:
        rows += 1
    return rows


def test_vector_size_limit() -> None:
    """Drill TestResultSetLoaderOverflow.testVectorSizeLimit / testBatchSizeLimit."""
    loader = ResultSetLoader(
        pa.schema([pa.field("s", pa.string(), nullable=False)]), max_bytes=LIMIT
    )
    writer = loader.writer
    loader.start_batch()
    count = 0
    while not writer.is_full():
        writer.start_row()
        writer.column(0).set(VALUE)
        writer.save_row()
        count += 1
    expected = rows_that_fit(4 + len(VALUE), 4, 1)
    assert count == expected + 1
    assert writer.row_count == expected
    assert loader.total_row_count == expected + 1
    assert loader.has_lookahead
    assert harvest(loader).num_rows == expected

    loader.start_batch()
    assert writer.row_count == 1
    assert loader.total_row_count == expected + 1
    batch = harvest(loader)
    assert batch.column(0).to_pylist() == [VALUE]
    loader.close()


def test_close_with_overflow() -> None:
    """Drill TestResultSetLoaderOverflow.testCloseWithOverflow: close with the look-ahead unharvested."""
    loader = ResultSetLoader(pa.schema([("s", pa.string())]), max_bytes=LIMIT)
    loader.start_batch()
    count = fill(loader.writer, lambda writer, number: writer.column(0).set(VALUE))
    assert count < 4096
    harvest(loader)
    loader.close()
    assert not loader.has_lookahead


def test_oversize_array() -> None:
    """Drill TestResultSetLoaderOverflow.testOversizeArray / testLargeArray: one value past the limit."""
    loader = ResultSetLoader(pa.schema([("s", pa.list_(pa.string()))]), max_bytes=LIMIT)
    writer = loader.writer
    loader.start_batch()
    writer.start_row()
    with pytest.raises(ValueTooLarge, match=r"column 's', row 0: a value of \d+ bytes.*max_bytes"):
        writer.column("s").set(["X" * 473] * 200)
    writer.column("s").set(["small"])
    writer.save_row()
    assert harvest(loader).column(0).to_pylist() == [["small"]]


def test_size_limit_on_array() -> None:
    """Drill TestResultSetLoaderOverflow.testSizeLimitOnArray: the overflow row's whole array moves."""
    loader = ResultSetLoader(pa.schema([("s", pa.list_(pa.string()))]), max_bytes=LIMIT)
    writer = loader.writer
    loader.start_batch()
    per_array = 13

    def cells(number: int) -> list[str]:
        return ["X" * 473 + f"{number}.{index}" for index in range(per_array)]

    count = fill(writer, lambda writer, number: writer.column(0).set(cells(number)))
    batch = harvest(loader)
    assert batch.num_rows == count - 1
    assert batch.column(0)[count - 2].as_py() == cells(count - 2)
    loader.start_batch()
    assert writer.row_count == 1
    assert loader.total_row_count == count
    batch = harvest(loader)
    assert batch.column(0).to_pylist() == [cells(count - 1)]


def test_array_overflow_with_other_arrays() -> None:
    """Drill TestResultSetLoaderOverflow.testArrayOverflowWithOtherArrays.

    Array a is written before the overflowing array b and moves with the
    row; c is written after b; c and d stop being written after a cut-off,
    and d is written again in the overflow row.
    """
    schema = pa.schema(
        [
            ("a", pa.list_(pa.int32())),
            ("b", pa.list_(pa.string())),
            ("c", pa.list_(pa.int32())),
            ("d", pa.list_(pa.int32())),
        ]
    )
    loader = ResultSetLoader(schema, max_bytes=LIMIT)
    writer = loader.writer
    a_count, b_count, c_count, d_count = 3, 11, 5, 7
    cutoff = LIMIT // 512 // b_count // 2

    def ints(number: int, per: int) -> list[int]:
        return [number * per + index for index in range(per)]

    def strings(number: int) -> list[str]:
        return ["X" * 512 + str(number * b_count + index) for index in range(b_count)]

    loader.start_batch()
    count = 0
    while not writer.is_full():
        writer.start_row()
        writer.column("a").set(ints(count, a_count))
        writer.column("b").set(strings(count))
        if count < cutoff:
            writer.column("c").set(ints(count, c_count))
        if count < cutoff or writer.is_full():
            writer.column("d").set(ints(count, d_count))
        writer.save_row()
        count += 1
    batch = harvest(loader)
    assert batch.num_rows == count - 1
    for row, values in enumerate(batch.to_pylist()):
        assert values["a"] == ints(row, a_count)
        assert values["b"] == strings(row)
        assert values["c"] == (ints(row, c_count) if row < cutoff else None)
        assert values["d"] == (ints(row, d_count) if row < cutoff else None)
    first_count = count - 1

    loader.start_batch()
    for step in range(5):
        writer.start_row()
        writer.column("a").set(ints(count, a_count))
        writer.column("b").set(strings(count))
        if step > 3:
            writer.column("c").set(ints(count, c_count))
            writer.column("d").set(ints(count, d_count))
        writer.save_row()
        count += 1
    batch = harvest(loader)
    assert batch.num_rows == 6
    for step, values in enumerate(batch.to_pylist()):
        row = first_count + step
        assert values["a"] == ints(row, a_count)
        assert values["b"] == strings(row)
        assert values["c"] == (ints(row, c_count) if step > 4 else None)
        assert values["d"] == (ints(row, d_count) if step in (0, 5) else None)


def test_missing_array_values() -> None:
    """Drill TestResultSetLoaderOverflow.testMissingArrayValues: an array with gaps before overflow."""
    schema = pa.schema(
        [
            pa.field("a", pa.int32(), nullable=False),
            pa.field("b", pa.string(), nullable=False),
            pa.field("c", pa.list_(pa.int32()), nullable=False),
        ]
    )
    loader = ResultSetLoader(schema, max_bytes=LIMIT)
    writer = loader.writer
    blank_after = LIMIT // 512 * 2 // 3

    def write(writer: RowWriter, number: int) -> None:
        writer.column("a").set(number)
        writer.column("b").set(VALUE)
        if number < blank_after:
            writer.column("c").set([number * 3 + index for index in range(3)])

    loader.start_batch()
    count = fill(writer, write)
    batch = harvest(loader)
    assert batch.num_rows == count - 1
    for row, values in enumerate(batch.to_pylist()):
        assert values["a"] == row
        assert values["b"] == VALUE
        assert values["c"] == ([row * 3, row * 3 + 1, row * 3 + 2] if row < blank_after else [])


def test_overflow_with_nullables() -> None:
    """Drill TestResultSetLoaderOverflow.testOverflowWithNullables."""
    schema = pa.schema(
        [
            pa.field("n", pa.int32(), nullable=False),
            ("a", pa.string()),
            ("b", pa.string()),
            ("c", pa.string()),
        ]
    )
    loader = ResultSetLoader(schema, max_bytes=LIMIT)
    writer = loader.writer

    def write(writer: RowWriter, number: int) -> None:
        writer.column(0).set(number)
        writer.column(1).set(None)
        writer.column(2).set(VALUE)
        writer.column(3).set(None)

    loader.start_batch()
    count = fill(writer, write)
    batch = harvest(loader)
    assert batch.num_rows == count - 1
    assert batch.to_pylist() == [
        {"n": row, "a": None, "b": VALUE, "c": None} for row in range(count - 1)
    ]
    loader.start_batch()
    batch = harvest(loader)
    assert batch.to_pylist() == [{"n": count - 1, "a": None, "b": VALUE, "c": None}]


def test_is_full_right_after_overflowing_value() -> None:
    loader = ResultSetLoader(pa.schema([("s", pa.string()), ("t", pa.string())]), max_bytes=2000)
    writer = loader.writer
    loader.start_batch()
    writer.start_row()
    writer.column("s").set("x" * 1000)
    writer.save_row()
    writer.start_row()
    assert not writer.is_full()
    writer.column("s").set("y" * 990)
    assert writer.is_full()
    with pytest.raises(BatchFull, match="row 1 overflowed"):
        writer.start_row()
    writer.column("t").set("after overflow")
    writer.save_row()
    assert harvest(loader).to_pylist() == [{"s": "x" * 1000, "t": None}]
    loader.start_batch()
    assert harvest(loader).to_pylist() == [{"s": "y" * 990, "t": "after overflow"}]


def test_row_larger_than_a_batch() -> None:
    """A row that could not fit even an empty batch is an error naming the row and the column."""
    loader = ResultSetLoader(pa.schema([("s", pa.string()), ("t", pa.string())]), max_bytes=1000)
    writer = loader.writer
    loader.start_batch()
    writer.start_row()
    writer.column("s").set("x" * 600)
    with pytest.raises(RowTooLarge, match=r"row 0 needs at least \d+ bytes.*column 't'"):
        writer.column("t").set("y" * 600)
    writer.column("t").set("short")
    writer.save_row()
    assert harvest(loader).to_pylist() == [{"s": "x" * 600, "t": "short"}]


def test_lookahead_row_that_grows_past_a_batch() -> None:
    loader = ResultSetLoader(pa.schema([("s", pa.string()), ("t", pa.string())]), max_bytes=1000)
    writer = loader.writer
    loader.start_batch()
    writer.start_row()
    writer.column("s").set("x" * 500)
    writer.save_row()
    writer.start_row()
    writer.column("s").set("y" * 500)
    assert writer.is_full()
    with pytest.raises(RowTooLarge, match="row 1"):
        writer.column("t").set("z" * 490)
    writer.save_row()
    harvest(loader)
    loader.start_batch()
    assert harvest(loader).to_pylist() == [{"s": "y" * 500, "t": None}]


def test_overflow_on_the_last_row_the_row_limit_allows() -> None:
    loader = ResultSetLoader(pa.schema([("s", pa.string())]), max_rows=3, max_bytes=1000)
    writer = loader.writer
    loader.start_batch()
    for text in ("a" * 300, "b" * 300, "c" * 390):
        writer.start_row()
        writer.column(0).set(text)
        writer.save_row()
    assert writer.is_full()
    assert harvest(loader).column(0).to_pylist() == ["a" * 300, "b" * 300]
    loader.start_batch()
    assert writer.row_count == 1
    assert not writer.is_full()


@dataclass
class DesignRun:
    """Two batches around one overflow, written as the Drill overflow design describes."""

    first: pa.RecordBatch
    second: pa.RecordBatch
    overflow_row: int
    version_before: int
    version_after: int


def big(number: int) -> str:
    return f"{number:06d}" + "B" * 994


@pytest.fixture(scope="module")
def design() -> DesignRun:
    """Columns a..h of Drill's ResultSetLoader overflow design, around one overflowing row.

    a is written before the overflow, b triggers it, c is written after it,
    d stops being written after row 9 (empty in the last rows), f has no
    value in the overflow row, g and h are added after the overflow, g with
    a value in the overflow row and h without.
    """
    schema = pa.schema(
        [
            pa.field("a", pa.int64(), nullable=False),
            pa.field("b", pa.string(), nullable=False),
            ("c", pa.int64()),
            ("d", pa.string()),
            ("f", pa.string()),
        ]
    )
    loader = ResultSetLoader(schema, max_bytes=LIMIT)
    writer = loader.writer
    loader.start_batch()
    number = 0
    while not writer.is_full():
        writer.start_row()
        writer.column("a").set(number)
        writer.column("b").set(big(number))
        overflowed = writer.is_full()
        writer.column("c").set(number)
        if number < 10:
            writer.column("d").set(f"d{number}")
        if overflowed:
            writer.add_column(pa.field("g", pa.int64())).set(number)
            writer.add_column(pa.field("h", pa.string()))
        else:
            writer.column("f").set(f"f{number}")
        writer.save_row()
        number += 1
    version_before = loader.schema_version
    first = harvest(loader)
    loader.start_batch()
    version_after = loader.schema_version
    writer.start_row()
    writer.column("a").set(number)
    writer.column("b").set("next")
    writer.column("h").set("h-next")
    writer.save_row()
    second = harvest(loader)
    return DesignRun(first, second, number - 1, version_before, version_after)


def test_design_a_column_written_before_overflow(design: DesignRun) -> None:
    """Drill ResultSetLoader overflow design, column a: its overflow-row value moves to the look-ahead."""
    assert design.first.column("a").to_pylist() == list(range(design.overflow_row))
    assert design.second.column("a").to_pylist() == [design.overflow_row, design.overflow_row + 1]


def test_design_b_column_that_overflows(design: DesignRun) -> None:
    """Drill ResultSetLoader overflow design, column b: the value that overflowed opens the next batch."""
    assert design.first.column("b").to_pylist() == [big(n) for n in range(design.overflow_row)]
    assert design.second.column("b")[0].as_py() == big(design.overflow_row)
    assert buffer_bytes(design.first) <= LIMIT < buffer_bytes(design.first) + len(big(0))


def test_design_c_column_written_after_overflow(design: DesignRun) -> None:
    """Drill ResultSetLoader overflow design, column c: written after overflow, into the look-ahead."""
    assert design.first.column("c").to_pylist() == list(range(design.overflow_row))
    assert design.second.column("c")[0].as_py() == design.overflow_row


def test_design_d_column_empty_in_last_rows(design: DesignRun) -> None:
    """Drill ResultSetLoader overflow design, column d: filled with nulls up to row n-1."""
    expected = [f"d{n}" if n < 10 else None for n in range(design.overflow_row)]
    assert design.first.column("d").to_pylist() == expected
    assert design.second.column("d").to_pylist() == [None, None]


def test_design_f_column_without_value_in_overflow_row(design: DesignRun) -> None:
    """Drill ResultSetLoader overflow design, column f: null in row 0 of the look-ahead batch."""
    assert design.first.column("f").to_pylist() == [f"f{n}" for n in range(design.overflow_row)]
    assert design.second.column("f").to_pylist() == [None, None]


def test_design_g_column_added_after_overflow_with_value(design: DesignRun) -> None:
    """Drill ResultSetLoader overflow design, column g: appears in the next batch only."""
    assert "g" not in design.first.schema.names
    assert design.second.column("g").to_pylist() == [design.overflow_row, None]
    assert design.version_after == design.version_before + 2


def test_design_h_column_added_after_overflow_without_value(design: DesignRun) -> None:
    """Drill ResultSetLoader overflow design, column h: next batch only, null in its row 0."""
    assert "h" not in design.first.schema.names
    assert design.second.column("h").to_pylist() == [None, "h-next"]
    assert design.second.schema.names == ["a", "b", "c", "d", "f", "g", "h"]


def test_list_of_structs_overflows_with_its_elements() -> None:
    """Nested overflow: the overflow row's struct elements move to the look-ahead batch."""
    item = pa.struct([("x", pa.int32()), ("s", pa.string())])
    loader = ResultSetLoader(
        pa.schema([("id", pa.int64()), ("items", pa.list_(item))]), max_bytes=LIMIT
    )
    writer = loader.writer

    def items(number: int) -> list[dict[str, object]]:
        return [{"x": number * 10 + index, "s": f"{number}-{index}" * 20} for index in range(5)]

    def write(writer: RowWriter, number: int) -> None:
        writer.column("id").set(number)
        writer.column("items").set(items(number))

    loader.start_batch()
    count = fill(writer, write)
    first = harvest(loader)
    assert first.column("items").to_pylist() == [items(n) for n in range(count - 1)]
    loader.start_batch()
    second = harvest(loader)
    assert second.to_pylist() == [{"id": count - 1, "items": items(count - 1)}]


def test_nested_lists_and_structs_overflow() -> None:
    """Nested overflow through a list of lists inside a struct."""
    inner = pa.struct([("tags", pa.list_(pa.list_(pa.string()))), ("n", pa.int16())])
    loader = ResultSetLoader(pa.schema([("m", inner)]), max_bytes=8 * 1024)
    writer = loader.writer

    def value(number: int) -> dict[str, object]:
        return {"tags": [[f"t{number}"] * 3, [], ["u" * 50] * (number % 4)], "n": number}

    loader.start_batch()
    count = fill(writer, lambda writer, number: writer.column("m").set(value(number)))
    first = harvest(loader)
    assert first.column("m").to_pylist() == [value(n) for n in range(count - 1)]
    loader.start_batch()
    assert harvest(loader).column("m").to_pylist() == [value(count - 1)]
