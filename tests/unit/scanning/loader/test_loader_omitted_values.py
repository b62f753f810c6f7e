"""Values a row leaves out, and rows a reader drops."""

from __future__ import annotations

import pyarrow as pa

from connect_plugin.scanning import ResultSetLoader, RowWriter
from tests.unit.scanning.loader.loader_checks import fill, harvest

SCHEMA = pa.schema(
    [
        pa.field("a", pa.int32(), nullable=False),
        pa.field("b", pa.string(), nullable=False),
        ("c", pa.string()),
        pa.field("d", pa.int32(), nullable=False),
        ("e", pa.int32()),
        pa.field("f", pa.list_(pa.string()), nullable=False),
    ]
)


def test_omitted_values_at_end() -> None:
    """Drill TestResultSetLoaderOmittedValues.testOmittedValuesAtEnd: holes and unset trailing columns."""
    loader = ResultSetLoader(SCHEMA)
    writer = loader.writer
    loader.start_batch()
    expected = []
    for number in range(1, 8):
        writer.start_row()
        writer.column("a").set(number)
        row: dict[str, object] = {"a": number, "b": "", "c": None, "d": 0, "e": None, "f": []}
        if number % 2:
            writer.column("b").set(f"b_{number}")
            writer.column("d").set(number * 10)
            row.update(b=f"b_{number}", d=number * 10)
        if number % 3 == 0:
            writer.column("c").set(f"c_{number}")
            writer.column("e").set(number * 100)
            writer.column("f").set([f"f_{number}"])
            row.update(c=f"c_{number}", e=number * 100, f=[f"f_{number}"])
        writer.save_row()
        expected.append(row)
    batch = harvest(loader)
    assert batch.to_pylist() == expected
    for name in ("a", "b", "d", "f"):
        assert batch.column(name).null_count == 0


def test_omitted_values_at_end_with_overflow() -> None:
    """Drill TestResultSetLoaderOmittedValues.testOmittedValuesAtEndWithOverflow."""
    schema = pa.schema(
        [
            pa.field("a", pa.int32(), nullable=False),
            pa.field("b", pa.string(), nullable=False),
            ("c", pa.string()),
            ("d", pa.string()),
        ]
    )
    loader = ResultSetLoader(schema, max_bytes=256 * 1024)
    writer = loader.writer
    value = "X" * 533
    holes_from = 300

    def write(writer: RowWriter, number: int) -> None:
        writer.column(0).set(number)
        writer.column(1).set(value)
        if number < holes_from:
            writer.column(3).set(f"d-{number}")

    loader.start_batch()
    count = fill(writer, write)
    batch = harvest(loader)
    assert batch.num_rows == count - 1
    assert batch.column("c").null_count == count - 1
    assert batch.column("d").to_pylist() == [
        f"d-{n}" if n < holes_from else None for n in range(count - 1)
    ]

    loader.start_batch()
    for step in range(10):
        writer.start_row()
        writer.column(0).set(count + step)
        writer.column(1).set(value)
        if step > 5:
            writer.column(3).set(f"d-{count + step}")
        writer.save_row()
    batch = harvest(loader)
    assert batch.num_rows == 11
    assert batch.column("a").to_pylist() == list(range(count - 1, count + 10))
    assert batch.column("c").null_count == 11
    assert batch.column("d").to_pylist() == [None] * 7 + [f"d-{count + s}" for s in range(6, 10)]


def test_skip_rows() -> None:
    """Drill TestResultSetLoaderOmittedValues.testSkipRows: rows not saved are dropped."""
    loader = ResultSetLoader(
        pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.string())])
    )
    writer = loader.writer
    loader.start_batch()
    for number in range(1, 15):
        writer.start_row()
        writer.column(0).set(number)
        writer.column(1).set(None if (number - 1) % 3 == 0 else f"b-{number}")
        if (number - 1) % 2 == 0:
            writer.save_row()
    batch = harvest(loader)
    assert batch.to_pylist() == [
        {"a": 1, "b": None},
        {"a": 3, "b": "b-3"},
        {"a": 5, "b": "b-5"},
        {"a": 7, "b": None},
        {"a": 9, "b": "b-9"},
        {"a": 11, "b": "b-11"},
        {"a": 13, "b": None},
    ]


def test_skip_overflow_row() -> None:
    """Drill TestResultSetLoaderOmittedValues.testSkipOverflowRow: dropping the overflow row."""
    loader = ResultSetLoader(
        pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.string())]),
        max_bytes=64 * 1024,
    )
    writer = loader.writer
    loader.start_batch()
    count = 0
    while not writer.is_full():
        writer.start_row()
        writer.column(0).set(count)
        writer.column(1).set("X" * 512)
        if not writer.is_full():
            writer.save_row()
        count += 1
    assert not loader.has_lookahead
    assert harvest(loader).num_rows == count - 1
    loader.start_batch()
    assert harvest(loader).num_rows == 0
    assert loader.total_row_count == count - 1


def test_harvest_drops_open_row() -> None:
    loader = ResultSetLoader(pa.schema([("a", pa.int32())]))
    writer = loader.writer
    loader.start_batch()
    writer.start_row()
    writer.column(0).set(1)
    writer.save_row()
    writer.start_row()
    writer.column(0).set(2)
    assert harvest(loader).column(0).to_pylist() == [1]
    loader.start_batch()
    assert harvest(loader).num_rows == 0
