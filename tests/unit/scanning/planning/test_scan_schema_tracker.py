"""The table schema across files: Drill's TestScanSchemaTracker cases, widening and conflicts.

Drill's tracker learns the schema reader by reader; here the same cases are
settled on the driver from samples, and checked on the batches read.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pytest

from connect_plugin.errors import SchemaConflict
from connect_plugin.scanning import ScanSpec, plan_scan
from connect_plugin.scanning.formats.widening import TypeClash, merge_types, normalize_type
from connect_plugin.scanning.planning.projection import Kind
from tests.unit.scanning.scan_checks import rows, scan, types, write_json, write_parquet

AB = pa.table({"a": pa.array([1, 2], pa.int32()), "b": pa.array([10, 20], pa.int64())})


def test_basics(tmp_path: Path) -> None:
    """Drill TestScanSchemaTracker.testBasics: SELECT a, b, c over files with (a, b) then (a, b, c).

    The missing column takes its type from the file that has it; the file
    without it reads as nulls of that type.
    """
    write_parquet(tmp_path / "1.parquet", AB)
    write_parquet(tmp_path / "2.parquet", AB.append_column("c", pa.array(["x", "y"])))
    table = scan(tmp_path, "parquet", columns=["a", "b", "c"])
    assert types(table) == {"a": "int32", "b": "int64", "c": "string"}
    assert table.column("c").to_pylist() == [None, None, "x", "y"]


def test_basics_column_known_nowhere_is_a_nullable_string(tmp_path: Path) -> None:
    """Drill TestScanSchemaTracker.testBasics, reader 1 alone: c exists in no file."""
    write_parquet(tmp_path / "1.parquet", AB)
    plan = plan_scan(ScanSpec([str(tmp_path)], "parquet", columns=["a", "b", "c"]))
    assert plan.schema.field("c").type == pa.string()
    assert plan.schema.field("c").nullable
    assert [column.kind for column in plan.columns] == [Kind.TABLE, Kind.TABLE, Kind.MISSING]


def test_wildcard(tmp_path: Path) -> None:
    """Drill TestScanSchemaTracker.testWildcard: (a, b) then (c): the union, first file first."""
    write_parquet(tmp_path / "1.parquet", AB)
    write_parquet(tmp_path / "2.parquet", pa.table({"c": ["x"]}))
    table = scan(tmp_path, "parquet")
    assert types(table) == {"a": "int32", "b": "int64", "c": "string"}
    assert rows(table)[-1] == {"a": None, "b": None, "c": "x"}


def test_provided_schema(tmp_path: Path) -> None:
    """Drill TestScanSchemaTracker.testProvidedSchema: SELECT a, b, c; provided (a, b); file (a, c)."""
    write_json(tmp_path / "f.json", [{"a": 1, "c": "x"}])
    provided = pa.schema([("a", pa.int32()), ("b", pa.int64())])
    table = scan(tmp_path, columns=["a", "b", "c"], provided_schema=provided)
    assert types(table) == {"a": "int32", "b": "int64", "c": "string"}
    assert rows(table) == [{"a": 1, "b": None, "c": "x"}]


def test_provided_schema_with_wildcard(tmp_path: Path) -> None:
    """Drill TestScanSchemaTracker.testProvidedSchemaWithWildcard: provided columns, then extras."""
    write_json(tmp_path / "f.json", [{"c": "x", "a": 1}])
    provided = pa.schema([("a", pa.int32()), ("b", pa.int64())])
    table = scan(tmp_path, provided_schema=provided)
    assert types(table) == {"a": "int32", "b": "int64", "c": "string"}
    assert rows(table) == [{"a": 1, "b": None, "c": "x"}]


def test_wildcard_with_explicit_with_provided(tmp_path: Path) -> None:
    """Drill TestScanSchemaTracker.testWildcardWithExplicitWithProvided: SELECT *, a keeps (a, b, c)."""
    write_json(tmp_path / "f.json", [{"b": 2, "a": 1, "c": "x"}])
    provided = pa.schema([("a", pa.int32()), ("b", pa.int64()), ("c", pa.string())])
    table = scan(tmp_path, columns=["*", "a"], provided_schema=provided)
    assert table.schema.names == ["a", "b", "c"]
    assert rows(table) == [{"a": 1, "b": 2, "c": "x"}]


def test_strict_provided_schema_with_wildcard(tmp_path: Path) -> None:
    """Drill TestScanSchemaTracker.testStrictProvidedSchemaWithWildcard: extra columns dropped.

    A strict provided schema settles everything, so planning does not even
    sample the files.
    """
    write_json(tmp_path / "f.json", [{"a": 1, "b": 2, "c": "x"}])
    provided = pa.schema([("a", pa.int32()), ("b", pa.int64())])
    spec = ScanSpec([str(tmp_path)], "json", provided_schema=provided, strict=True)
    (tmp_path / "f.json").chmod(0)
    assert plan_scan(spec).schema.equals(provided)
    (tmp_path / "f.json").chmod(0o644)
    table = scan(tmp_path, provided_schema=provided, strict=True)
    assert table.schema.equals(provided)
    assert rows(table) == [{"a": 1, "b": 2}]


def test_wildcard_without_schema_change(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Drill TestScanSchemaTracker.testWildcardWithoutSchemaChange: the first file fixes (a, b)."""
    first = write_json(tmp_path / "1.json", [{"a": 1, "b": 2}])
    write_json(tmp_path / "2.json", [{"a": 3, "b": 4, "c": "dropped"}])
    with caplog.at_level(logging.WARNING):
        table = scan(tmp_path, strict=True)
    assert table.schema.names == ["a", "b"]
    assert rows(table) == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert f"the first file ({first})" in caplog.text
    assert "column 'c'" in caplog.text


@pytest.mark.parametrize("provided", [None, pa.schema([("a", pa.int32()), ("b", pa.int64())])])
def test_empty_project(tmp_path: Path, provided: pa.Schema | None) -> None:
    """Drill TestScanSchemaTracker.testEmptyProject and testEmptyProjectWithProvidedSchema.

    No columns at all, only row counts.
    """
    write_json(tmp_path / "f.json", [{"a": 1}, {"a": 2}, {"b": 3}])
    table = scan(tmp_path, columns=[], provided_schema=provided)
    assert table.num_columns == 0
    assert table.num_rows == 3


def test_wildcard_with_explicit_with_reader_schema(tmp_path: Path) -> None:
    """Drill TestScanSchemaTracker.testWildcardWithExplicitWithReaderSchema: SELECT *, a on (a, b, c)."""
    write_parquet(tmp_path / "f.parquet", AB.append_column("c", pa.array(["x", "y"])))
    table = scan(tmp_path, "parquet", columns=["*", "a"])
    assert types(table) == {"a": "int32", "b": "int64", "c": "string"}


def test_wildcard_with_explicit_with_provided_and_reader_schema(tmp_path: Path) -> None:
    """Drill TestScanSchemaTracker.testWildcardWithExplicitWithProvidedAndReaderSchema."""
    provided = pa.schema([("a", pa.int32()), ("b", pa.int64()), ("c", pa.string())])
    write_parquet(tmp_path / "f.parquet", pa.table({"a": [1], "b": [2], "c": ["x"]}, provided))
    table = scan(tmp_path, "parquet", columns=["*", "a"], provided_schema=provided)
    assert table.schema.equals(provided)
    assert rows(table) == [{"a": 1, "b": 2, "c": "x"}]


def test_numeric_widening_across_files(tmp_path: Path) -> None:
    write_parquet(tmp_path / "1.parquet", pa.table({"n": pa.array([1], pa.int16())}))
    write_parquet(tmp_path / "2.parquet", pa.table({"n": pa.array([2], pa.int64())}))
    assert types(scan(tmp_path, "parquet")) == {"n": "int64"}
    write_parquet(tmp_path / "3.parquet", pa.table({"n": pa.array([2.5], pa.float32())}))
    table = scan(tmp_path, "parquet")
    assert types(table) == {"n": "double"}
    assert table.column("n").to_pylist() == [1.0, 2.0, 2.5]


def test_a_conflict_names_both_files_the_column_and_both_types(tmp_path: Path) -> None:
    first = write_json(tmp_path / "1.json", [{"a": 1, "b": "text"}])
    second = write_json(tmp_path / "2.json", [{"a": 2, "b": 5}])
    with pytest.raises(SchemaConflict) as caught:
        scan(tmp_path)
    message = str(caught.value)
    for part in ("column 'b'", "string", "int64", str(first), str(second), "schema"):
        assert part in message


def test_a_conflict_in_a_column_the_projection_leaves_out_is_no_error(tmp_path: Path) -> None:
    write_json(tmp_path / "1.json", [{"a": 1, "b": "text"}])
    write_json(tmp_path / "2.json", [{"a": 2, "b": 5}])
    assert rows(scan(tmp_path, columns=["a"])) == [{"a": 1}, {"a": 2}]
    with pytest.raises(SchemaConflict, match="column 'b'"):
        scan(tmp_path, columns=["a", "b"])


def test_a_provided_type_settles_a_conflict(tmp_path: Path) -> None:
    write_json(tmp_path / "1.json", [{"b": "text"}])
    write_json(tmp_path / "2.json", [{"b": 5}])
    table = scan(tmp_path, provided_schema=pa.schema([("b", pa.string())]))
    assert rows(table) == [{"b": "text"}, {"b": "5"}]


def test_nested_conflicts_name_the_member(tmp_path: Path) -> None:
    write_json(tmp_path / "1.json", [{"m": {"x": 1, "y": [1]}}])
    write_json(tmp_path / "2.json", [{"m": {"x": "s"}}])
    with pytest.raises(SchemaConflict, match=r"column 'm\.x' is int64 .* but string"):
        scan(tmp_path)


def test_structs_merge_member_by_member(tmp_path: Path) -> None:
    write_json(tmp_path / "1.json", [{"m": {"x": 1}}])
    write_json(tmp_path / "2.json", [{"m": {"x": 2.5, "y": "s"}}])
    table = scan(tmp_path)
    assert types(table) == {"m": "struct<x: double, y: string>"}
    assert rows(table) == [{"m": {"x": 1.0, "y": None}}, {"m": {"x": 2.5, "y": "s"}}]


def test_names_match_without_case_and_keep_the_first_spelling(tmp_path: Path) -> None:
    write_json(tmp_path / "1.json", [{"Name": "a"}])
    write_json(tmp_path / "2.json", [{"NAME": "b"}])
    table = scan(tmp_path)
    assert rows(table) == [{"Name": "a"}, {"Name": "b"}]


def test_a_column_only_ever_null_is_a_string(tmp_path: Path) -> None:
    write_json(tmp_path / "1.json", [{"a": None, "l": []}])
    assert types(scan(tmp_path)) == {"a": "string", "l": "list<element: string>"}


def test_json_strings_that_look_like_dates_stay_strings(tmp_path: Path) -> None:
    write_json(tmp_path / "1.json", [{"d": "2024-01-02", "t": "2024-01-02T03:04:05"}])
    table = scan(tmp_path)
    assert types(table) == {"d": "string", "t": "string"}
    provided = pa.schema([("d", pa.date32()), ("t", pa.timestamp("us"))])
    assert types(scan(tmp_path, provided_schema=provided)) == {
        "d": "date32[day]",
        "t": "timestamp[us]",
    }


@pytest.mark.parametrize(
    ("left", "right", "merged"),
    [
        (pa.int8(), pa.int32(), pa.int32()),
        (pa.int64(), pa.int16(), pa.int64()),
        (pa.uint32(), pa.int32(), pa.int64()),
        (pa.int32(), pa.float32(), pa.float64()),
        (pa.float32(), pa.float64(), pa.float64()),
        (pa.null(), pa.string(), pa.string()),
        (pa.timestamp("ms"), pa.timestamp("us"), pa.timestamp("us")),
        (pa.date64(), pa.date32(), pa.date32()),
        (pa.list_(pa.int32()), pa.list_(pa.float64()), pa.list_(pa.float64())),
    ],
)
def test_widening_rules(left: pa.DataType, right: pa.DataType, merged: pa.DataType) -> None:
    assert merge_types(left, right) == merged
    assert merge_types(right, left) == merged


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (pa.string(), pa.int64()),
        (pa.uint64(), pa.int8()),
        (pa.decimal128(10, 2), pa.decimal128(10, 3)),
        (pa.timestamp("us", tz="UTC"), pa.timestamp("us")),
        (pa.list_(pa.int64()), pa.int64()),
        (pa.bool_(), pa.int64()),
    ],
)
def test_conflicts(left: pa.DataType, right: pa.DataType) -> None:
    with pytest.raises(TypeClash):
        merge_types(left, right)


def test_types_are_normalized_to_one_spelling_per_spark_type() -> None:
    dictionary = pa.dictionary(pa.int32(), pa.large_string())
    nested = pa.large_list(pa.struct([("s", pa.large_binary())]))
    assert normalize_type(dictionary) == pa.string()
    assert normalize_type(nested) == pa.list_(pa.struct([("s", pa.binary())]))
