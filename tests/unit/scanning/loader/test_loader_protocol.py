"""The batch and row protocol of the result set loader."""

from __future__ import annotations

import pyarrow as pa
import pytest

from connect_plugin.errors import (
    BatchFull,
    ColumnNotFound,
    ConfigError,
    DuplicateColumn,
    LoaderStateError,
    UnsupportedColumnType,
)
from connect_plugin.scanning import ResultSetLoader
from tests.unit.scanning.loader.loader_checks import harvest


def test_basics() -> None:
    """Drill TestResultSetLoaderProtocol.testBasics: states, counts and schema versions."""
    loader = ResultSetLoader()
    writer = loader.writer
    assert loader.schema_version == 0
    assert loader.max_rows == 4096
    assert loader.max_bytes == 16 * 1024 * 1024
    assert writer.row_count == 0
    assert loader.batch_count == 0
    assert loader.total_row_count == 0
    assert loader.is_projection_empty
    with pytest.raises(LoaderStateError, match="start_batch"):
        loader.harvest()

    writer.add_column(pa.field("a", pa.int32(), nullable=False))
    assert not loader.is_projection_empty
    assert writer.schema == pa.schema([pa.field("a", pa.int32(), nullable=False)])
    with pytest.raises(LoaderStateError, match="start_batch"):
        writer.start_row()
    with pytest.raises(LoaderStateError):
        writer.save_row()

    loader.start_batch()
    with pytest.raises(LoaderStateError, match="harvest"):
        loader.start_batch()
    assert not writer.is_full()
    writer.start_row()
    writer.column(0).set(100)
    assert writer.row_count == 0
    writer.save_row()
    assert writer.row_count == 1
    assert loader.total_row_count == 1

    writer.add_column(pa.field("b", pa.int32()))
    writer.start_row()
    writer.column(0).set(200)
    writer.column(1).set(210)
    writer.save_row()
    assert writer.row_count == 2

    batch = harvest(loader)
    assert loader.schema_version == 2
    assert writer.row_count == 0
    assert loader.batch_count == 1
    assert loader.total_row_count == 2
    assert batch.to_pylist() == [{"a": 100, "b": None}, {"a": 200, "b": 210}]

    with pytest.raises(LoaderStateError):
        writer.start_row()
    with pytest.raises(LoaderStateError):
        loader.harvest()
    with pytest.raises(LoaderStateError):
        writer.save_row()

    loader.start_batch()
    for value in (300, 400):
        writer.start_row()
        writer.column("a").set(value)
        writer.column("b").set(value + 10)
        writer.save_row()
    batch = harvest(loader)
    assert loader.schema_version == 2
    assert loader.batch_count == 2
    assert loader.total_row_count == 4
    assert batch.to_pylist() == [{"a": 300, "b": 310}, {"a": 400, "b": 410}]

    loader.start_batch()
    writer.start_row()
    writer.column(0).set(500)
    writer.column(1).set(510)
    writer.add_column(pa.field("c", pa.int32())).set(520)
    writer.save_row()
    batch = harvest(loader)
    assert loader.schema_version == 3
    assert batch.to_pylist() == [{"a": 500, "b": 510, "c": 520}]

    loader.close()
    with pytest.raises(LoaderStateError, match="closed"):
        writer.start_row()
    with pytest.raises(LoaderStateError, match="closed"):
        _ = loader.writer
    with pytest.raises(LoaderStateError, match="closed"):
        loader.start_batch()
    with pytest.raises(LoaderStateError, match="closed"):
        loader.harvest()
    with pytest.raises(LoaderStateError, match="closed"):
        writer.save_row()
    loader.close()


def test_case_insensitive_schema() -> None:
    """Drill TestResultSetLoaderProtocol.testCaseInsensitiveSchema."""
    loader = ResultSetLoader()
    writer = loader.writer
    a = writer.add_column(pa.field("a", pa.int64()))
    assert writer.column("A") is a
    assert writer.column("a") is a
    big_b = writer.add_column(pa.field("B", pa.string()))
    assert writer.column("b") is big_b
    with pytest.raises(DuplicateColumn, match=r"'A'.*clashes with column 'a'"):
        writer.add_column(pa.field("A", pa.float64()))
    assert writer.add_column(pa.field("B", pa.string())) is big_b
    loader.start_batch()
    writer.start_row()
    writer.column("A").set(1)
    writer.column("b").set("x")
    writer.save_row()
    batch = harvest(loader)
    assert batch.schema.names == ["a", "B"]
    assert batch.to_pylist() == [{"a": 1, "B": "x"}]


def test_initial_schema() -> None:
    """Drill TestResultSetLoaderProtocol.testInitialSchema: a schema given up front."""
    schema = pa.schema(
        [
            pa.field("a", pa.int32(), nullable=False),
            pa.field("b", pa.int32()),
            pa.field("c", pa.string(), nullable=False),
        ]
    )
    loader = ResultSetLoader(schema)
    writer = loader.writer
    loader.start_batch()
    assert loader.schema_version == 3
    for row in [(10, 100, "fred"), (20, None, "barney"), (30, 300, "wilma")]:
        writer.start_row()
        for index, value in enumerate(row):
            writer.column(index).set(value)
        writer.save_row()
    batch = harvest(loader)
    assert batch.schema == schema
    assert batch.to_pylist() == [
        {"a": 10, "b": 100, "c": "fred"},
        {"a": 20, "b": None, "c": "barney"},
        {"a": 30, "b": 300, "c": "wilma"},
    ]


def test_overwrite_row() -> None:
    """Drill TestResultSetLoaderProtocol.testOverwriteRow: start_row without save_row drops the row."""
    loader = ResultSetLoader(pa.schema([("a", pa.int32()), ("b", pa.string())]))
    writer = loader.writer
    loader.start_batch()
    for value in range(10):
        writer.start_row()
        writer.column("a").set(value)
        writer.column("b").set("x" * 10 * value)
        if value % 2 == 0:
            writer.save_row()
    writer.start_row()
    writer.column("a").set(99)
    batch = harvest(loader)
    assert batch.column("a").to_pylist() == [0, 2, 4, 6, 8]
    assert batch.column("b").to_pylist() == ["x" * 10 * value for value in (0, 2, 4, 6, 8)]


def test_close_without_harvest() -> None:
    """Drill TestResultSetLoaderProtocol.testCloseWithoutHarvest."""
    loader = ResultSetLoader(pa.schema([("a", pa.int32())]))
    loader.start_batch()
    writer = loader.writer
    for value in range(100):
        writer.start_row()
        writer.column(0).set(value)
        writer.save_row()
    loader.close()
    assert loader.total_row_count == 100


def test_column_writer_is_stable() -> None:
    """The same column writer object comes back, by name, by position and from add_column."""
    loader = ResultSetLoader()
    writer = loader.writer
    added = writer.add_column(pa.field("x", pa.float64()))
    assert writer.column("x") is added
    assert writer.column("X") is added
    assert writer.column(0) is added
    assert added.is_projected
    assert writer.columns == [added]


def test_unknown_column() -> None:
    loader = ResultSetLoader(pa.schema([("a", pa.int32())]))
    with pytest.raises(ColumnNotFound, match=r"no column 'z'.*'a'.*add_column"):
        loader.writer.column("z")
    with pytest.raises(ColumnNotFound, match="position 3"):
        loader.writer.column(3)


def test_unsupported_type() -> None:
    loader = ResultSetLoader()
    with pytest.raises(UnsupportedColumnType, match=r"'d'.*dictionary"):
        loader.writer.add_column(pa.field("d", pa.dictionary(pa.int32(), pa.string())))
    with pytest.raises(TypeError, match=r"pyarrow\.Field"):
        loader.writer.add_column("a")


def test_bad_byte_limit() -> None:
    with pytest.raises(ConfigError, match="max_bytes"):
        ResultSetLoader(max_bytes=0)


def test_set_outside_a_row_does_not_leak() -> None:
    """A value set between rows does not reach the next row, whose slots start empty."""
    loader = ResultSetLoader(pa.schema([("a", pa.int32()), ("s", pa.string())]))
    writer = loader.writer
    loader.start_batch()
    writer.column("a").set(5)
    writer.start_row()
    writer.save_row()
    batch = harvest(loader)
    assert batch.to_pylist() == [{"a": None, "s": None}]


def test_set_outside_a_row_that_overflows() -> None:
    loader = ResultSetLoader(pa.schema([("s", pa.string())]), max_bytes=100)
    loader.start_batch()
    with pytest.raises(LoaderStateError, match="outside a row"):
        loader.writer.column("s").set("x" * 95)


def test_start_batch_with_no_rows_gives_empty_batch() -> None:
    loader = ResultSetLoader(pa.schema([("a", pa.int32())]))
    loader.start_batch()
    batch = harvest(loader)
    assert batch.num_rows == 0
    assert batch.schema == pa.schema([("a", pa.int32())])


def test_full_batch_refuses_rows_until_harvest() -> None:
    loader = ResultSetLoader(pa.schema([("a", pa.int32())]), max_rows=2)
    writer = loader.writer
    loader.start_batch()
    for value in range(2):
        writer.start_row()
        writer.column(0).set(value)
        writer.save_row()
    with pytest.raises(BatchFull, match=r"max_rows=2.*harvest\(\)"):
        writer.start_row()
    with pytest.raises(BatchFull):
        writer.write_rows([(3,)])
    harvest(loader)
    loader.start_batch()
    writer.start_row()
    writer.save_row()


def test_context_manager_closes() -> None:
    with ResultSetLoader(pa.schema([("a", pa.int32())])) as loader:
        loader.start_batch()
    with pytest.raises(LoaderStateError, match="closed"):
        loader.start_batch()
