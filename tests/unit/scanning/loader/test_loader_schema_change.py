"""Columns added while rows are being written."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

from connect_plugin.errors import MissingValue
from connect_plugin.scanning import ResultSetLoader
from tests.unit.scanning.loader.loader_checks import harvest


def test_schema_change_first_batch() -> None:
    """Drill TestResultSetSchemaChange.testSchemaChangeFirstBatch: back-fill of added columns."""
    loader = ResultSetLoader()
    writer = loader.writer
    writer.add_column(pa.field("a", pa.string(), nullable=False))
    loader.start_batch()
    number = 0

    def write(*values: object) -> None:
        nonlocal number
        writer.start_row()
        number += 1
        for index, value in enumerate(values):
            writer.column(index).set(value(number) if callable(value) else value)
        writer.save_row()

    for _ in range(2):
        write(lambda n: f"a_{n}")
    writer.add_column(pa.field("b", pa.int32()))
    for _ in range(2):
        write(lambda n: f"a_{n}", lambda n: n)
    writer.add_column(pa.field("c", pa.string()))
    for _ in range(2):
        write(lambda n: f"a_{n}", lambda n: n, lambda n: f"c_{n}")
    writer.add_column(pa.field("d", pa.string(), nullable=False))
    writer.add_column(pa.field("e", pa.int32(), nullable=False))
    for _ in range(2):
        write(
            lambda n: f"a_{n}",
            lambda n: n,
            lambda n: f"c_{n}",
            lambda n: f"d_{n}",
            lambda n: n * 10,
        )
    writer.add_column(pa.field("f", pa.list_(pa.string()), nullable=False))
    for _ in range(2):
        write(
            lambda n: f"a_{n}",
            lambda n: n,
            lambda n: f"c_{n}",
            lambda n: f"d_{n}",
            lambda n: n * 10,
            lambda n: [f"f_{n}-1", f"f_{n}-2"],
        )
    batch = harvest(loader)
    assert batch.schema == pa.schema(
        [
            pa.field("a", pa.string(), nullable=False),
            ("b", pa.int32()),
            ("c", pa.string()),
            pa.field("d", pa.string(), nullable=False),
            pa.field("e", pa.int32(), nullable=False),
            pa.field("f", pa.list_(pa.string()), nullable=False),
        ]
    )
    assert [tuple(row.values()) for row in batch.to_pylist()] == [
        ("a_1", None, None, "", 0, []),
        ("a_2", None, None, "", 0, []),
        ("a_3", 3, None, "", 0, []),
        ("a_4", 4, None, "", 0, []),
        ("a_5", 5, "c_5", "", 0, []),
        ("a_6", 6, "c_6", "", 0, []),
        ("a_7", 7, "c_7", "d_7", 70, []),
        ("a_8", 8, "c_8", "d_8", 80, []),
        ("a_9", 9, "c_9", "d_9", 90, ["f_9-1", "f_9-2"]),
        ("a_10", 10, "c_10", "d_10", 100, ["f_10-1", "f_10-2"]),
    ]
    assert loader.schema_version == 6


def test_schema_change_with_overflow() -> None:
    """Drill TestResultSetSchemaChange.testSchemaChangeWithOverflow: columns added after overflow."""
    loader = ResultSetLoader(max_bytes=64 * 1024)
    writer = loader.writer
    writer.add_column(pa.field("a", pa.string(), nullable=False))
    loader.start_batch()
    value = "X" * 512
    count = 0
    while not writer.is_full():
        writer.start_row()
        writer.column(0).set(value)
        if writer.is_full():
            writer.add_column(pa.field("b", pa.int32())).set(count)
            writer.add_column(pa.field("c", pa.string())).set(f"c-{count}")
            writer.add_column(pa.field("d", pa.int32(), nullable=False))
        writer.save_row()
        count += 1
    batch = harvest(loader)
    assert batch.schema == pa.schema([pa.field("a", pa.string(), nullable=False)])
    assert batch.num_rows == count - 1
    assert loader.schema_version == 1

    loader.start_batch()
    writer.add_column(pa.field("e", pa.int32(), nullable=False))
    batch = harvest(loader)
    assert loader.schema_version == 5
    assert batch.schema.names == ["a", "b", "c", "d", "e"]
    assert batch.to_pylist() == [
        {"a": value, "b": count - 1, "c": f"c-{count - 1}", "d": 0, "e": 0}
    ]


@pytest.mark.parametrize(
    ("arrow_type", "empty"),
    [
        (pa.int8(), 0),
        (pa.uint64(), 0),
        (pa.float64(), 0.0),
        (pa.bool_(), False),
        (pa.string(), ""),
        (pa.large_binary(), b""),
        (pa.binary(3), b"\x00\x00\x00"),
        (pa.decimal128(5, 2), decimal.Decimal("0.00")),
        (pa.duration("s"), datetime.timedelta(0)),
        (pa.list_(pa.int64()), []),
        (pa.map_(pa.string(), pa.int32()), []),
        (pa.struct([("x", pa.int32()), ("y", pa.string())]), {"x": None, "y": None}),
        (
            pa.struct([pa.field("x", pa.int32(), nullable=False), ("y", pa.string())]),
            {"x": 0, "y": None},
        ),
        (pa.list_(pa.field("item", pa.int8(), nullable=False), 2), [0, 0]),
    ],
)
def test_non_nullable_back_fill(arrow_type: pa.DataType, empty: object) -> None:
    """A non-nullable column added mid-batch is back-filled with its type's empty value."""
    loader = ResultSetLoader(pa.schema([("k", pa.int32())]))
    writer = loader.writer
    loader.start_batch()
    writer.start_row()
    writer.column("k").set(1)
    writer.save_row()
    writer.add_column(pa.field("v", arrow_type, nullable=False))
    writer.start_row()
    writer.column("k").set(2)
    writer.save_row()
    batch = harvest(loader)
    assert batch.column("v").to_pylist() == [empty, empty]
    assert batch.column("v").null_count == 0


@pytest.mark.parametrize(
    "arrow_type",
    [
        pa.date32(),
        pa.date64(),
        pa.timestamp("us"),
        pa.timestamp("ms", tz="UTC"),
        pa.time64("us"),
        pa.struct([pa.field("when", pa.date32(), nullable=False)]),
    ],
)
def test_no_empty_value_after_first_row(arrow_type: pa.DataType) -> None:
    """Non-nullable types with no good empty value cannot be added once rows exist."""
    loader = ResultSetLoader(pa.schema([("k", pa.int32())]))
    writer = loader.writer
    loader.start_batch()
    writer.start_row()
    writer.save_row()
    with pytest.raises(MissingValue, match=r"'late'.*after 1 row\(s\).*nullable"):
        writer.add_column(pa.field("late", arrow_type, nullable=False))
    writer.add_column(pa.field("late", arrow_type))
    assert harvest(loader).column("late").to_pylist() == [None]


def test_no_empty_value_column_before_first_row() -> None:
    """Added before the first row, such a column works as long as every row sets it."""
    loader = ResultSetLoader(pa.schema([pa.field("day", pa.date32(), nullable=False)]))
    writer = loader.writer
    loader.start_batch()
    writer.start_row()
    writer.column("day").set(datetime.date(2024, 2, 29))
    writer.save_row()
    writer.start_row()
    with pytest.raises(MissingValue, match=r"'day'.*row 1.*set it"):
        writer.save_row()
    writer.column("day").set(datetime.date(2024, 3, 1))
    writer.save_row()
    harvest(loader)
    loader.start_batch()
    writer.add_column(pa.field("stamp", pa.timestamp("s"), nullable=False))
    writer.start_row()
    writer.column("day").set(0)
    writer.column("stamp").set(datetime.datetime(2024, 1, 1, 12))
    writer.save_row()
    assert harvest(loader).to_pylist() == [
        {"day": datetime.date(1970, 1, 1), "stamp": datetime.datetime(2024, 1, 1, 12)}
    ]


def test_column_added_between_batches_counts_from_next_batch() -> None:
    loader = ResultSetLoader(pa.schema([("a", pa.int32())]))
    writer = loader.writer
    loader.start_batch()
    harvest(loader)
    writer.add_column(pa.field("b", pa.int32()))
    assert loader.schema_version == 1
    loader.start_batch()
    assert loader.schema_version == 2


def test_column_whose_back_fill_passes_the_byte_limit() -> None:
    """A column whose back-fill would pass the limit waits for the next batch with the open row."""
    loader = ResultSetLoader(pa.schema([("a", pa.int64())]), max_bytes=1000)
    writer = loader.writer
    loader.start_batch()
    count = 0
    while count < 60:
        writer.start_row()
        writer.column("a").set(count)
        writer.save_row()
        count += 1
    writer.start_row()
    writer.column("a").set(count)
    writer.add_column(pa.field("wide", pa.decimal256(40, 2))).set(decimal.Decimal("1.50"))
    assert writer.is_full()
    writer.save_row()
    batch = harvest(loader)
    assert batch.schema.names == ["a"]
    assert batch.column("a").to_pylist() == list(range(60))
    loader.start_batch()
    assert harvest(loader).to_pylist() == [{"a": 60, "wide": decimal.Decimal("1.50")}]
