"""Values of each type: what they become, and errors for values of the wrong type."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

from connect_plugin.errors import ColumnTypeError
from connect_plugin.scanning import ResultSetLoader
from tests.unit.scanning.loader.loader_checks import harvest

UTC = datetime.timezone.utc


def write_one(arrow_type: pa.DataType, value: object, *, nullable: bool = True) -> pa.RecordBatch:
    loader = ResultSetLoader(pa.schema([pa.field("v", arrow_type, nullable=nullable)]))
    loader.start_batch()
    writer = loader.writer
    writer.start_row()
    writer.column("v").set(value)
    writer.save_row()
    return harvest(loader)


@pytest.mark.parametrize(
    ("arrow_type", "value", "expected"),
    [
        (pa.int8(), -128, -128),
        (pa.uint64(), 2**64 - 1, 2**64 - 1),
        (pa.int64(), -(2**63), -(2**63)),
        (pa.float32(), 2, 2.0),
        (pa.float16(), 0.5, 0.5),
        (pa.float64(), 7, 7.0),
        (pa.bool_(), False, False),
        (pa.string(), "héllo wörld ✓", "héllo wörld ✓"),
        (pa.string(), b"bytes", "bytes"),
        (pa.large_string(), "large", "large"),
        (pa.binary(), bytearray(b"\x00\x01"), b"\x00\x01"),
        (pa.binary(), "text", b"text"),
        (pa.binary(2), b"ab", b"ab"),
        (pa.date32(), datetime.date(2020, 2, 29), datetime.date(2020, 2, 29)),
        (pa.date64(), datetime.date(1999, 12, 31), datetime.date(1999, 12, 31)),
        (
            pa.timestamp("us"),
            datetime.datetime(2021, 5, 6, 7, 8, 9),
            datetime.datetime(2021, 5, 6, 7, 8, 9),
        ),
        (
            pa.timestamp("s", tz="UTC"),
            datetime.datetime(2021, 5, 6, tzinfo=UTC),
            datetime.datetime(2021, 5, 6, tzinfo=UTC),
        ),
        (pa.timestamp("s"), 60, datetime.datetime(1970, 1, 1, 0, 1)),
        (pa.time64("us"), datetime.time(12, 30), datetime.time(12, 30)),
        (pa.duration("ms"), datetime.timedelta(seconds=3), datetime.timedelta(seconds=3)),
        (pa.decimal128(6, 2), decimal.Decimal("1234.50"), decimal.Decimal("1234.50")),
        (pa.decimal256(40, 0), 10**39, decimal.Decimal(10**39)),
        (pa.null(), None, None),
        (pa.list_(pa.int64()), (1, 2), [1, 2]),
        (pa.list_(pa.string()), ["a", None, "ü"], ["a", None, "ü"]),
        (pa.list_(pa.float64()), [1, 2.5], [1.0, 2.5]),
        (pa.list_(pa.list_(pa.int8())), [[1], [], None, [2, 3]], [[1], [], None, [2, 3]]),
        (pa.list_(pa.int32(), 2), [1, 2], [1, 2]),
        (
            pa.struct([("X", pa.int32()), ("y", pa.string())]),
            {"x": 1, "Y": "b"},
            {"X": 1, "y": "b"},
        ),
        (pa.struct([("x", pa.int32())]), {}, {"x": None}),
        (pa.map_(pa.string(), pa.int32()), {"a": 1, "b": None}, [("a", 1), ("b", None)]),
        (pa.map_(pa.int32(), pa.string()), [(1, "one")], [(1, "one")]),
        (
            pa.list_(pa.struct([("k", pa.list_(pa.string()))])),
            [{"k": ["a"]}, {"K": []}],
            [{"k": ["a"]}, {"k": []}],
        ),
    ],
)
def test_values_round_trip(arrow_type: pa.DataType, value: object, expected: object) -> None:
    batch = write_one(arrow_type, value)
    assert batch.schema.field("v").type == arrow_type
    assert batch.column("v").to_pylist() == [expected]


@pytest.mark.parametrize(
    ("arrow_type", "value", "message"),
    [
        (pa.int64(), "7", r"column 'v', row 0: expected int64, got str '7'"),
        (pa.int64(), 1.5, r"expected int64, got float 1\.5"),
        (pa.int64(), True, r"expected int64, got bool True"),
        (pa.int64(), 2**63, r"expected int64 between .*, got int 9223372036854775808"),
        (pa.int8(), 300, r"expected int8 between -128 and 127, got int 300"),
        (pa.uint8(), -1, r"expected uint8 between 0 and 255"),
        (pa.float64(), "1.0", r"expected double, got str"),
        (pa.float64(), True, r"expected double, got bool"),
        (pa.bool_(), 1, r"expected bool, got int 1"),
        (pa.string(), 5, r"expected string, got int 5"),
        (pa.string(), b"\xff", r"valid UTF-8"),
        (pa.binary(), 5, r"expected binary, got int"),
        (pa.binary(3), b"toolong", r"3 bytes"),
        (
            pa.date32(),
            datetime.datetime(2020, 1, 1, 5),
            r"date32\[day\] \(a date, not a datetime\)",
        ),
        (pa.date32(), "2020-01-01", r"expected date32\[day\], got str"),
        (pa.timestamp("us"), datetime.date(2020, 1, 1), r"expected timestamp\[us\], got date"),
        (pa.decimal128(5, 2), 1.5, r"expected decimal128\(5, 2\), got float"),
        (pa.null(), 1, r"expected null"),
        (pa.list_(pa.int64()), 5, r"expected list<item: int64>, got int 5"),
        (pa.list_(pa.string()), "ab", r"expected list<item: string>, got str 'ab'"),
        (
            pa.list_(pa.int64()),
            [1, "x"],
            r"column 'v' at \[1\], row 0: expected int64, got str 'x'",
        ),
        (pa.list_(pa.int64()), [1, 2.5], r"at \[1\].*expected int64, got float"),
        (pa.list_(pa.int32(), 2), [1], r"2 elements"),
        (
            pa.list_(pa.field("item", pa.int64(), nullable=False)),
            [1, None],
            r"at \[1\].*int64 not null is not nullable",
        ),
        (pa.struct([("x", pa.int32())]), {"zz": 1}, r"at \.zz.*one of the fields \['x'\]"),
        (pa.struct([("x", pa.int32())]), {"x": "no"}, r"at \.x, row 0: expected int32, got str"),
        (pa.struct([("x", pa.int32())]), [1], r"a mapping of field names"),
        (pa.map_(pa.string(), pa.int32()), {None: 1}, r"string not null is not nullable"),
        (pa.map_(pa.string(), pa.int32()), [(1, 2, 3)], r"\(key, value\) pair"),
    ],
)
def test_wrong_type_names_column_row_and_types(
    arrow_type: pa.DataType, value: object, message: str
) -> None:
    loader = ResultSetLoader(pa.schema([("v", arrow_type)]))
    writer = loader.writer
    loader.start_batch()
    writer.start_row()
    with pytest.raises(ColumnTypeError, match=message):
        writer.column("v").set(value)


def test_null_in_non_nullable_column() -> None:
    loader = ResultSetLoader(pa.schema([pa.field("v", pa.string(), nullable=False)]))
    loader.start_batch()
    loader.writer.start_row()
    with pytest.raises(
        ColumnTypeError,
        match=r"column 'v', row 0: expected a value \(string not null is not nullable\), got NoneType None",
    ):
        loader.writer.column(0).set(None)


def test_error_row_counts_across_batches() -> None:
    loader = ResultSetLoader(pa.schema([("v", pa.int32())]), max_rows=3)
    writer = loader.writer
    for _ in range(2):
        loader.start_batch()
        for number in range(3):
            writer.start_row()
            writer.column(0).set(number)
            writer.save_row()
        harvest(loader)
    loader.start_batch()
    writer.start_row()
    writer.save_row()
    writer.start_row()
    with pytest.raises(ColumnTypeError, match="row 7"):
        writer.column(0).set("seven")


def test_arrow_only_errors_surface_at_harvest_with_row() -> None:
    """What only Arrow can judge (decimal digits, element ranges) is reported at harvest, located."""
    loader = ResultSetLoader(
        pa.schema([("d", pa.decimal128(4, 2)), ("l", pa.list_(pa.int8()))]),
        max_rows=10,
    )
    writer = loader.writer
    loader.start_batch()
    for number in range(3):
        writer.start_row()
        writer.column("d").set(
            decimal.Decimal("12.5") if number != 2 else decimal.Decimal("123.456")
        )
        writer.save_row()
    with pytest.raises(ColumnTypeError, match=r"column 'd', row 2: Arrow cannot convert Decimal"):
        loader.harvest()
    loader.start_batch()
    writer.start_row()
    writer.column("l").set([1, 300])
    writer.save_row()
    with pytest.raises(ColumnTypeError, match=r"column 'l', row 3: Arrow cannot convert .*300"):
        loader.harvest()


def test_overwriting_a_value_keeps_the_last() -> None:
    loader = ResultSetLoader(pa.schema([("s", pa.string()), ("n", pa.int32())]))
    writer = loader.writer
    loader.start_batch()
    writer.start_row()
    writer.column("s").set("first")
    writer.column("s").set("second")
    writer.column("n").set(1)
    writer.column("n").set(None)
    writer.save_row()
    assert harvest(loader).to_pylist() == [{"s": "second", "n": None}]


def test_reader_may_reuse_its_containers() -> None:
    """Values are copied when set, so a reader can refill one list or dict for every row."""
    schema = pa.schema(
        [("l", pa.list_(pa.int64())), ("m", pa.struct([("x", pa.int32())])), ("b", pa.binary())]
    )
    loader = ResultSetLoader(schema)
    writer = loader.writer
    loader.start_batch()
    items: list[int] = []
    struct: dict[str, int] = {}
    data = bytearray()
    for number in range(3):
        items.append(number)
        struct["x"] = number
        data.append(65 + number)
        writer.start_row()
        writer.column("l").set(items)
        writer.column("m").set(struct)
        writer.column("b").set(data)
        writer.save_row()
    assert harvest(loader).to_pylist() == [
        {"l": [0], "m": {"x": 0}, "b": b"A"},
        {"l": [0, 1], "m": {"x": 1}, "b": b"AB"},
        {"l": [0, 1, 2], "m": {"x": 2}, "b": b"ABC"},
    ]
