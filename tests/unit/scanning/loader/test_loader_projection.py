"""Projection: unprojected columns discard, an empty projection counts rows."""

from __future__ import annotations

import pyarrow as pa
import pytest

from connect_plugin.scanning import ResultSetLoader, RowWriter
from tests.unit.scanning.loader.loader_checks import fill, harvest

SCHEMA = pa.schema([("a", pa.int32()), ("b", pa.int32()), ("c", pa.int32()), ("d", pa.int32())])


def write_abcd(writer: RowWriter, number: int) -> None:
    for index in range(4):
        writer.column(index).set(number * 10 + index)


def test_projection_static() -> None:
    """Drill TestResultSetLoaderProjection.testProjectionStatic: a schema up front, some projected."""
    loader = ResultSetLoader(SCHEMA, projection=["c", "b", "e"])
    writer = loader.writer
    assert [column.is_projected for column in writer.columns] == [False, True, True, False]
    loader.start_batch()
    for number in range(1, 4):
        writer.start_row()
        write_abcd(writer, number)
        writer.save_row()
    batch = harvest(loader)
    assert batch.schema.names == ["b", "c"]
    assert batch.to_pylist() == [{"b": n * 10 + 1, "c": n * 10 + 2} for n in range(1, 4)]


def test_projection_dynamic() -> None:
    """Drill TestResultSetLoaderProjection.testProjectionDynamic: columns added as the reader goes."""
    loader = ResultSetLoader(projection=["C", "b", "e"])
    writer = loader.writer
    for field in SCHEMA:
        writer.add_column(field)
    assert writer.column("a").is_projected is False
    assert writer.column("c").is_projected is True
    loader.start_batch()
    writer.start_row()
    write_abcd(writer, 1)
    writer.save_row()
    assert harvest(loader).to_pylist() == [{"b": 11, "c": 12}]
    assert loader.schema_version == 2


def test_array_and_map_projection() -> None:
    """Drill TestResultSetLoaderProjection.testArrayProjection / testMapProjection (top-level names)."""
    schema = pa.schema(
        [
            ("a1", pa.list_(pa.int32())),
            ("a2", pa.list_(pa.string())),
            ("m1", pa.struct([("x", pa.int32())])),
            ("m2", pa.struct([("y", pa.string())])),
        ]
    )
    loader = ResultSetLoader(schema, projection=["a1", "m2"])
    writer = loader.writer
    loader.start_batch()
    writer.start_row()
    writer.column("a1").set([1, 2])
    writer.column("a2").set(["dropped"])
    writer.column("m1").set({"x": 3})
    writer.column("m2").set({"y": "kept"})
    writer.save_row()
    assert harvest(loader).to_pylist() == [{"a1": [1, 2], "m2": {"y": "kept"}}]


def test_project_with_overflow() -> None:
    """Drill TestResultSetLoaderProjection.testProjectWithOverflow.

    Unprojected columns stay out of the way of overflow and of the byte limit.
    """
    schema = pa.schema([("small", pa.string()), ("big", pa.string()), ("n", pa.int32())])
    loader = ResultSetLoader(schema, projection=["big", "n"], max_bytes=64 * 1024)
    writer = loader.writer
    huge = "H" * 100_000

    def write(writer: RowWriter, number: int) -> None:
        writer.column("small").set(huge)
        writer.column("big").set("B" * 512)
        writer.column("n").set(number)

    loader.start_batch()
    count = fill(writer, write)
    assert count > 100
    batch = harvest(loader)
    assert batch.schema.names == ["big", "n"]
    assert batch.column("n").to_pylist() == list(range(count - 1))
    loader.start_batch()
    assert harvest(loader).to_pylist() == [{"big": "B" * 512, "n": count - 1}]


@pytest.mark.parametrize(
    ("arrow_type", "values"),
    [
        (pa.int32(), [1, None, "not even an int"]),
        (pa.list_(pa.int32()), [[1, 2], [], None]),
        (pa.struct([("a", pa.int32()), ("b", pa.string())]), [{"a": 1}, {"b": "x"}, None]),
        (pa.list_(pa.struct([("a", pa.int32())])), [[{"a": 1}], [{"a": 2}, {"a": 3}]]),
        (pa.list_(pa.list_(pa.string())), [[["a"], ["b", "c"]], [[]]]),
        (pa.map_(pa.string(), pa.int32()), [{"k": 1}]),
        (pa.date32(), ["anything"]),
    ],
)
def test_unprojected_writers_discard(arrow_type: pa.DataType, values: list[object]) -> None:
    """Drill TestResultSetLoaderUnprojected: testScalar, testScalarArray, testMap,
    testMapArray, testList and test2DList: unprojected writers take anything and drop it.
    """
    loader = ResultSetLoader(
        pa.schema([("kept", pa.int32()), ("dropped", arrow_type)]), projection=["kept"]
    )
    writer = loader.writer
    dropped = writer.column("dropped")
    assert not dropped.is_projected
    loader.start_batch()
    for number, value in enumerate(values):
        writer.start_row()
        writer.column("kept").set(number)
        dropped.set(value)
        writer.save_row()
    batch = harvest(loader)
    assert batch.schema.names == ["kept"]
    assert batch.column("kept").to_pylist() == list(range(len(values)))


def test_unprojected_column_added_mid_batch_changes_nothing() -> None:
    loader = ResultSetLoader(pa.schema([("kept", pa.int32())]), projection=["kept"])
    writer = loader.writer
    loader.start_batch()
    writer.start_row()
    writer.column("kept").set(1)
    writer.add_column(pa.field("late", pa.date32(), nullable=False)).set("ignored")
    writer.save_row()
    assert loader.schema_version == 1
    assert harvest(loader).to_pylist() == [{"kept": 1}]


def test_empty_top_schema() -> None:
    """Drill TestResultSetLoaderEmptyProject.testEmptyTopSchema: row counts without columns."""
    loader = ResultSetLoader(SCHEMA, projection=[], max_rows=100)
    writer = loader.writer
    assert loader.is_projection_empty
    assert not any(column.is_projected for column in writer.columns)
    loader.start_batch()
    assert fill(writer, write_abcd) == 100
    batch = harvest(loader)
    assert batch.num_rows == 100
    assert batch.num_columns == 0
    loader.start_batch()
    for number in range(5):
        writer.start_row()
        write_abcd(writer, number)
        if number % 2 == 0:
            writer.save_row()
    batch = harvest(loader)
    assert (batch.num_rows, batch.num_columns) == (3, 0)


def test_disjoint_schema() -> None:
    """Drill TestResultSetLoaderEmptyProject.testDisjointSchema: nothing in the projection exists."""
    loader = ResultSetLoader(SCHEMA, projection=["x", "y"])
    writer = loader.writer
    assert loader.is_projection_empty
    loader.start_batch()
    for number in range(7):
        writer.start_row()
        write_abcd(writer, number)
        writer.save_row()
    batch = harvest(loader)
    assert (batch.num_rows, batch.num_columns) == (7, 0)


def test_non_empty_schema_skip_rows() -> None:
    """Drill TestResultSetLoaderEmptyProject.testNonEmptySchema: skipping rows with a projection."""
    loader = ResultSetLoader(SCHEMA, projection=["a"])
    writer = loader.writer
    loader.start_batch()
    for number in range(10):
        writer.start_row()
        write_abcd(writer, number)
        if number % 3 == 0:
            writer.save_row()
    assert harvest(loader).column("a").to_pylist() == [0, 30, 60, 90]


def test_empty_projection_ignores_byte_limit() -> None:
    """Unprojected values never count towards the byte limit."""
    loader = ResultSetLoader(
        pa.schema([("s", pa.string())]), projection=[], max_bytes=100, max_rows=50
    )
    writer = loader.writer
    loader.start_batch()
    assert fill(writer, lambda writer, number: writer.column("s").set("x" * 1000)) == 50
    assert harvest(loader).num_rows == 50
