"""write_rows: many rows at once, under the same limits and rules as the row path."""

from __future__ import annotations

import datetime
from collections import namedtuple
from collections.abc import Sequence

import pyarrow as pa
import pytest

from connect_plugin.errors import (
    BatchFull,
    ColumnNotFound,
    ColumnTypeError,
    LoaderStateError,
    MissingValue,
    RowShapeError,
    RowTooLarge,
    ValueTooLarge,
)
from connect_plugin.scanning import ResultSetLoader
from tests.unit.scanning.loader.loader_checks import buffer_bytes, harvest

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("score", pa.float64()),
        ("name", pa.string()),
        ("tags", pa.list_(pa.string())),
    ]
)


def sample(count: int, start: int = 0) -> list[tuple[object, ...]]:
    return [
        (n, n / 4, f"name-{n}" * (n % 5), [f"t{n}"] * (n % 3)) for n in range(start, start + count)
    ]


def as_dicts(rows: list[tuple[object, ...]]) -> list[dict[str, object]]:
    return [dict(zip(SCHEMA.names, row, strict=True)) for row in rows]


def load_all(loader: ResultSetLoader, rows: Sequence[object]) -> list[pa.RecordBatch]:
    writer = loader.writer
    batches = []
    position = 0
    loader.start_batch()
    while position < len(rows):
        taken = writer.write_rows(rows, position)
        position += taken
        if writer.is_full():
            batches.append(harvest(loader))
            loader.start_batch()
    batches.append(harvest(loader))
    return batches


def test_tuples_become_the_same_batch_as_the_row_path() -> None:
    rows = sample(50)
    loader = ResultSetLoader(SCHEMA)
    (batch,) = load_all(loader, list(rows))
    assert batch.schema == SCHEMA
    assert batch.to_pylist() == as_dicts(rows)
    assert loader.total_row_count == 50


def test_dicts_with_missing_and_case_variant_keys() -> None:
    loader = ResultSetLoader(SCHEMA)
    rows: list[object] = [
        {"id": 1, "NAME": "one"},
        {"Id": 2, "score": 2.5, "tags": ["x"]},
        {"id": 3},
    ]
    (batch,) = load_all(loader, rows)
    assert batch.to_pylist() == [
        {"id": 1, "score": None, "name": "one", "tags": None},
        {"id": 2, "score": 2.5, "name": None, "tags": ["x"]},
        {"id": 3, "score": None, "name": None, "tags": None},
    ]


def test_missing_key_in_non_nullable_column_is_its_empty_value() -> None:
    loader = ResultSetLoader(SCHEMA)
    (batch,) = load_all(loader, [{"name": "no id"}])
    assert batch.column("id").to_pylist() == [0]


def test_row_limit_applies() -> None:
    loader = ResultSetLoader(SCHEMA, max_rows=100)
    rows = sample(1000)
    writer = loader.writer
    loader.start_batch()
    assert writer.write_rows(rows) == 100
    assert writer.is_full()
    assert not loader.has_lookahead
    with pytest.raises(BatchFull, match="harvest"):
        writer.write_rows(rows, 100)
    batches = [harvest(loader), *load_all(loader, rows[100:])]
    assert [batch.num_rows for batch in batches] == [100] * 10 + [0]


def test_byte_limit_and_overflow_row() -> None:
    """The row that passes the byte limit is taken into the look-ahead batch."""
    loader = ResultSetLoader(pa.schema([("s", pa.string())]), max_bytes=64 * 1024)
    rows = [(f"{n:05d}" + "x" * 507,) for n in range(1000)]
    writer = loader.writer
    loader.start_batch()
    taken = writer.write_rows(rows)
    assert writer.is_full()
    assert loader.has_lookahead
    assert writer.row_count == taken - 1
    batch = harvest(loader)
    assert batch.column(0).to_pylist() == [row[0] for row in rows[: taken - 1]]
    assert buffer_bytes(batch) > 64 * 1024 - 600
    loader.start_batch()
    assert writer.row_count == 1
    taken_next = writer.write_rows(rows, taken)
    batch = harvest(loader)
    assert batch.column(0).to_pylist() == [
        row[0] for row in rows[taken - 1 : taken + taken_next - 1]
    ]


def test_all_batches_hold_every_row_once() -> None:
    loader = ResultSetLoader(SCHEMA, max_bytes=8 * 1024, max_rows=300)
    rows = sample(3000)
    batches = load_all(loader, list(rows))
    assert all(buffer_bytes(batch) <= 8 * 1024 for batch in batches)
    assert all(batch.num_rows <= 300 for batch in batches)
    assert pa.Table.from_batches(batches).to_pylist() == as_dicts(rows)


def test_bulk_and_row_path_mix() -> None:
    loader = ResultSetLoader(SCHEMA)
    writer = loader.writer
    loader.start_batch()
    writer.write_rows(sample(3))
    writer.start_row()
    writer.column("id").set(99)
    writer.save_row()
    writer.add_column(pa.field("extra", pa.int8()))
    writer.write_rows([(100, None, None, None, 7)])
    writer.start_row()
    writer.column("extra").set(8)
    writer.save_row()
    batch = harvest(loader)
    assert batch.column("id").to_pylist() == [0, 1, 2, 99, 100, 0]
    assert batch.column("extra").to_pylist() == [None, None, None, None, 7, 8]


def test_write_rows_drops_an_open_row() -> None:
    loader = ResultSetLoader(SCHEMA)
    writer = loader.writer
    loader.start_batch()
    writer.start_row()
    writer.column("id").set(-1)
    writer.write_rows(sample(1))
    assert harvest(loader).column("id").to_pylist() == [0]


def test_write_rows_needs_a_batch() -> None:
    loader = ResultSetLoader(SCHEMA)
    with pytest.raises(LoaderStateError, match="start_batch"):
        loader.writer.write_rows(sample(1))


def test_unprojected_columns_in_tuples() -> None:
    loader = ResultSetLoader(SCHEMA, projection=["name", "id"])
    rows = sample(20)
    (batch,) = load_all(loader, list(rows))
    assert batch.to_pylist() == [{"id": row[0], "name": row[2]} for row in rows]


def test_empty_projection_counts_rows() -> None:
    loader = ResultSetLoader(SCHEMA, projection=[], max_rows=7)
    batches = load_all(loader, list(sample(20)))
    assert [(batch.num_rows, batch.num_columns) for batch in batches] == [(7, 0), (7, 0), (6, 0)]


def test_lists_and_namedtuples_are_rows() -> None:
    row_type = namedtuple("row_type", ["id", "score", "name", "tags"])
    loader = ResultSetLoader(SCHEMA)
    (batch,) = load_all(loader, [row_type(1, 1.0, "a", []), [2, None, "b", None]])
    assert batch.column("id").to_pylist() == [1, 2]


@pytest.mark.parametrize(
    ("rows", "error", "message"),
    [
        ([(1, 1.0, "a", [])] * 3 + [(2, 2.0)], RowShapeError, r"row 3 has 2 values.*4: id, score"),
        ([(1, 1.0, "a", []), "oops"], RowShapeError, r"row 1 is a str"),
        ([{"id": 1, "nope": 2}], ColumnNotFound, r"row 0 has key 'nope'"),
        ([{"id": 1, "NAME": "x", "name": "y"}], RowShapeError, r"row 0 gives column 'name' twice"),
        (
            [(1, 1.0, "a", [])] * 5 + [(2.5, 1.0, "a", [])],
            ColumnTypeError,
            r"column 'id', row 5: expected int64 not null, got float 2\.5",
        ),
        (
            [(1, True, "a", [])],
            ColumnTypeError,
            r"column 'score', row 0: expected double, got bool",
        ),
        ([(1, 1.0, 7, [])], ColumnTypeError, r"column 'name', row 0: expected string, got int 7"),
        (
            [(1, 1.0, "a", ["ok", 3])],
            ColumnTypeError,
            r"column 'tags' at \[1\], row 0: expected string",
        ),
        ([(None, 1.0, "a", [])], ColumnTypeError, r"column 'id', row 0: expected a value"),
        ([{"id": 2**64}], ColumnTypeError, r"column 'id', row 0: expected int64 between"),
    ],
)
def test_bulk_errors(rows: list[object], error: type[Exception], message: str) -> None:
    loader = ResultSetLoader(SCHEMA)
    loader.start_batch()
    with pytest.raises(error, match=message):
        loader.writer.write_rows(rows)


def test_bulk_policed_types() -> None:
    """Values Arrow would silently convert are refused as in the row path."""
    schema = pa.schema(
        [
            ("i", pa.int32()),
            ("d", pa.date32()),
            ("l", pa.list_(pa.int64())),
            ("s", pa.struct([("x", pa.int8())])),
        ]
    )
    cases = [
        ((1.7, None, None, None), r"column 'i', row 0: expected int32, got float 1\.7"),
        ((None, datetime.datetime(2020, 1, 1, 5), None, None), r"column 'd'.*not a datetime"),
        ((None, None, [1, 2.5], None), r"column 'l' at \[1\]"),
        ((None, None, None, {"X": 1, "y": 2}), r"column 's' at \.y"),
        ((None, None, "12", None), r"column 'l', row 0: expected list<item: int64>, got str"),
    ]
    for row, message in cases:
        loader = ResultSetLoader(schema)
        loader.start_batch()
        with pytest.raises(ColumnTypeError, match=message):
            loader.writer.write_rows([row])
    loader = ResultSetLoader(schema)
    (batch,) = load_all(
        loader, [(1, datetime.date(2020, 1, 1), [1], {"X": 1}), (None, 3, None, None)]
    )
    assert batch.to_pylist() == [
        {"i": 1, "d": datetime.date(2020, 1, 1), "l": [1], "s": {"x": 1}},
        {"i": None, "d": datetime.date(1970, 1, 4), "l": None, "s": None},
    ]


def test_bulk_missing_value_without_empty() -> None:
    loader = ResultSetLoader(pa.schema([pa.field("day", pa.date32(), nullable=False)]))
    loader.start_batch()
    with pytest.raises(MissingValue, match="column 'day', row 1"):
        loader.writer.write_rows([{"day": datetime.date(2020, 1, 1)}, {}])


def test_bulk_value_and_row_too_large() -> None:
    loader = ResultSetLoader(pa.schema([("s", pa.string()), ("t", pa.string())]), max_bytes=1000)
    writer = loader.writer
    loader.start_batch()
    with pytest.raises(ValueTooLarge, match="column 't', row 1: a value of 2000 bytes"):
        writer.write_rows([("a", "b"), ("c", "x" * 2000)])
    assert writer.row_count == 0
    with pytest.raises(RowTooLarge, match="row 0 needs at least"):
        writer.write_rows([("x" * 600, "y" * 600)])
    assert writer.write_rows([("ok", "fine")]) == 1
