"""Two files in one scan: Drill's TestScanLifecycleTwoReaders cases.

Drill's mock readers become json files: the "standard" reader is a file
with (a int, b string) and rows (10, fred), (20, wilma); a "null" reader is
an empty file.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pytest

from connect_plugin.errors import SchemaConflict
from tests.unit.scanning.scan_checks import rows, scan, types, write_json, write_parquet

STANDARD = [{"a": 10, "b": "fred"}, {"a": 20, "b": "wilma"}]
STANDARD_ROWS = STANDARD


def standard(path: Path) -> Path:
    return write_json(path, STANDARD)


def empty(path: Path) -> Path:
    return write_json(path, [])


def test_two_null_readers(tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testTwoNullReaders: no schema, no rows, no error."""
    empty(tmp_path / "1.json")
    empty(tmp_path / "2.json")
    table = scan(tmp_path)
    assert table.num_columns == 0
    assert table.num_rows == 0


def test_null_then_valid_reader(tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testNullThenValidReader."""
    empty(tmp_path / "1.json")
    standard(tmp_path / "2.json")
    table = scan(tmp_path)
    assert types(table) == {"a": "int64", "b": "string"}
    assert rows(table) == STANDARD_ROWS


def test_valid_then_null_reader(tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testValidThenNullReader."""
    standard(tmp_path / "1.json")
    empty(tmp_path / "2.json")
    assert rows(scan(tmp_path)) == STANDARD_ROWS


def test_two_valid_readers(tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testTwoValidReaders."""
    standard(tmp_path / "1.json")
    standard(tmp_path / "2.json")
    assert rows(scan(tmp_path)) == STANDARD_ROWS * 2


@pytest.mark.parametrize("strict", [False, True])
def test_shrinking_schema(tmp_path: Path, strict: bool) -> None:
    """Drill TestScanLifecycleTwoReaders.testShrinkingSchema: (a, b) then (a); b's type is reused."""
    standard(tmp_path / "1.json")
    write_json(tmp_path / "2.json", [{"a": 101}, {"a": 102}])
    table = scan(tmp_path, strict=strict)
    assert types(table) == {"a": "int64", "b": "string"}
    assert rows(table)[2:] == [{"a": 101, "b": None}, {"a": 102, "b": None}]


def test_shrinking_schema_with_conflict(tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testShrinkingSchemaWithConflict: SELECT a, b; (a) then (a, b).

    Drill guesses nullable INT for b in the first reader and then fails on
    the second reader's VARCHAR. Settling the schema before reading knows b
    is a string from the second file, so there is no conflict to report.
    """
    write_json(tmp_path / "1.json", [{"a": 1}])
    write_json(tmp_path / "2.json", [{"a": 2, "b": "barney"}])
    table = scan(tmp_path, columns=["a", "b"])
    assert types(table) == {"a": "int64", "b": "string"}
    assert rows(table) == [{"a": 1, "b": None}, {"a": 2, "b": "barney"}]


def test_expanding_schema_allowing_schema_change(tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testExpandingSchemaAllowingSchemaChange."""
    standard(tmp_path / "1.json")
    write_json(tmp_path / "2.json", [{"a": 101, "b": "wilma", "c": 1001}])
    table = scan(tmp_path)
    assert table.schema.names == ["a", "b", "c"]
    assert rows(table) == [
        {"a": 10, "b": "fred", "c": None},
        {"a": 20, "b": "wilma", "c": None},
        {"a": 101, "b": "wilma", "c": 1001},
    ]


def test_expanding_schema_disallowing_schema_change(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Drill TestScanLifecycleTwoReaders.testExpandingSchemaDisallowingSchemaChange: c is dropped."""
    standard(tmp_path / "1.json")
    later = write_json(tmp_path / "2.json", [{"a": 101, "b": "wilma", "c": 1001}])
    with caplog.at_level(logging.WARNING):
        table = scan(tmp_path, strict=True)
    assert table.schema.names == ["a", "b"]
    assert rows(table)[-1] == {"a": 101, "b": "wilma"}
    assert f"column 'c' of file {later}" in caplog.text


def test_early_schema_type_conflict(tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testEarlySchemaTypeConflict: b is a string, then an int."""
    first = standard(tmp_path / "1.json")
    second = write_json(tmp_path / "2.json", [{"a": 30, "b": 40}])
    with pytest.raises(SchemaConflict, match="no widening rule joins them") as caught:
        scan(tmp_path)
    assert f"string in file {first}" in str(caught.value)
    assert f"int64 in file {second}" in str(caught.value)


def test_late_schema_type_conflict(tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testLateSchemaTypeConflict: b changes type inside a file.

    pyarrow rejects the sample; reading it record by record finds the lines.
    """
    changing = write_json(tmp_path / "one" / "3.json", [{"b": "x"}, {"a": 1}, {"b": [1]}])
    with pytest.raises(SchemaConflict) as caught:
        scan(changing)
    assert f"column 'b' of file {changing} is string up to line 1 and list" in str(caught.value)
    assert "on line 3" in str(caught.value)
    standard(tmp_path / "two" / "1.json")
    second = write_json(tmp_path / "two" / "2.json", [{"a": 30}, {"a": 40, "b": 50}])
    with pytest.raises(SchemaConflict, match=f"int64 in file {second}"):
        scan(tmp_path / "two")


def test_mode_conflict(tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testModeConflict: required b, then nullable b.

    Drill refuses to mix nullable and non-nullable; files read leniently are
    all nullable here, so the two files scan together.
    """
    required = pa.schema([pa.field("a", pa.int64()), pa.field("b", pa.string(), nullable=False)])
    write_parquet(tmp_path / "1.parquet", pa.table({"a": [10], "b": ["fred"]}, required))
    write_parquet(tmp_path / "2.parquet", pa.table({"a": [20], "b": [None]}))
    table = scan(tmp_path, "parquet")
    assert table.schema.field("b").nullable
    assert rows(table) == [{"a": 10, "b": "fred"}, {"a": 20, "b": None}]


def test_column_reordering_ab(tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testColumnReorderingAB: (a, b) then (b, a)."""
    standard(tmp_path / "1.json")
    write_json(tmp_path / "2.json", [{"b": "barney", "a": 30}, {"b": "betty", "a": 40}])
    table = scan(tmp_path)
    assert table.schema.names == ["a", "b"]
    assert rows(table)[2:] == [{"a": 30, "b": "barney"}, {"a": 40, "b": "betty"}]


def test_column_reordering_ba(tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testColumnReorderingBA: (b, a) then (a, b)."""
    write_json(tmp_path / "1.json", [{"b": "barney", "a": 30}, {"b": "betty", "a": 40}])
    standard(tmp_path / "2.json")
    table = scan(tmp_path)
    assert table.schema.names == ["b", "a"]
    assert rows(table)[2:] == [{"b": "fred", "a": 10}, {"b": "wilma", "a": 20}]


def test_specified_column_order(tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testSpecifiedColumnOrder: SELECT a, b over (b, a), (a, b)."""
    write_json(tmp_path / "1.json", [{"b": "barney", "a": 30}])
    standard(tmp_path / "2.json")
    table = scan(tmp_path, columns=["a", "b"])
    assert rows(table) == [{"a": 30, "b": "barney"}, *STANDARD_ROWS]
