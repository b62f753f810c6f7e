"""Implicit file columns and partition columns: Drill's TestImplicitColumnResolver cases."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from connect_plugin.errors import BadRecord, InvalidScanSpec
from connect_plugin.scanning import ScanSpec, plan_scan
from connect_plugin.scanning.planning.implicit import IMPLICIT_MARKER
from connect_plugin.scanning.planning.projection import Kind
from tests.unit.scanning.scan_checks import rows, scan, types, write_json


def tree(root: Path) -> Path:
    """Files one, two and three directories below the scan root."""
    write_json(root / "x" / "f1.json", [{"a": 1, "f": 10}])
    write_json(root / "x" / "y" / "f2.json", [{"a": 2, "f": 20}])
    write_json(root / "x" / "y" / "z" / "f3.json", [{"a": 3, "f": 30}])
    return root


def kinds(spec: ScanSpec) -> list[Kind]:
    return [column.kind for column in plan_scan(spec).columns]


def marked(name: str, kind: str, arrow_type: pa.DataType | None = None, **extra: bool) -> pa.Field:
    """A provided field marked as implicit column ``kind``, a string unless ``arrow_type``."""
    field_type = pa.string() if arrow_type is None else arrow_type
    return pa.field(name, field_type, metadata={IMPLICIT_MARKER: kind.encode()}, **extra)


def test_no_implicit_cols(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testNoImplicitCols."""
    tree(tmp_path)
    spec = ScanSpec([str(tmp_path)], "json", columns=["a", "b", "c"])
    assert kinds(spec) == [Kind.TABLE, Kind.MISSING, Kind.MISSING]


def test_file_implicit_column_selection(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testFileImplicitColumnSelection: named as spelled."""
    path = write_json(tmp_path / "d" / "data.json", [{"a": 1}])
    table = scan(tmp_path, columns=["a", "fqn", "filEPath", "filename", "suffix"])
    assert table.schema.names == ["a", "fqn", "filEPath", "filename", "suffix"]
    assert rows(table) == [
        {
            "a": 1,
            "fqn": str(path),
            "filEPath": str(tmp_path / "d"),
            "filename": "data.json",
            "suffix": "json",
        }
    ]


def test_partition_column_selection(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testPartitionColumnSelection: nullable strings."""
    tree(tmp_path)
    table = scan(tmp_path, columns=["dir2", "DIR1", "dir0", "a"])
    assert table.schema.names == ["dir2", "DIR1", "dir0", "a"]
    assert all(field.nullable and field.type == pa.string() for field in list(table.schema)[:3])
    assert rows(table) == [
        {"dir2": None, "DIR1": None, "dir0": "x", "a": 1},
        {"dir2": None, "DIR1": "y", "dir0": "x", "a": 2},
        {"dir2": "z", "DIR1": "y", "dir0": "x", "a": 3},
    ]


def test_legacy_wildcard(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testLegacyWildcard: the wildcard adds dir0..dir2.

    Drill's revised wildcard (testRevisedWildcard), without partition
    columns, is not offered: the issue asks for Drill's legacy expansion.
    """
    tree(tmp_path)
    table = scan(tmp_path)
    assert table.schema.names == ["a", "f", "dir0", "dir1", "dir2"]


def test_legacy_wildcard_and_implicit_cols(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testLegacyWildcardAndImplictCols: *, filename, suffix."""
    write_json(tmp_path / "p" / "q" / "f.csv.json", [{"a": 1}])
    table = scan(tmp_path, columns=["*", "filename", "suffix"])
    assert rows(table) == [
        {"a": 1, "dir0": "p", "dir1": "q", "filename": "f.csv.json", "suffix": "json"}
    ]


def test_legacy_wildcard_and_implicit_cols_mixed(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testLegacyWildcardAndImplicitColsMixed.

    filename, *, suffix, dir0 with depth 3: dir0 keeps its place and the
    expansion adds only dir1 and dir2.
    """
    tree(tmp_path)
    table = scan(tmp_path, columns=["filename", "*", "suffix", "dir0"])
    assert table.schema.names == ["filename", "a", "f", "dir1", "dir2", "suffix", "dir0"]


def test_shadowed(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testShadowed: nested syntax means table columns."""
    write_json(
        tmp_path / "f.json",
        [{"filename": {"a": "m"}, "filepath": ["p0"], "dir0": {"b": 5}, "dir1": [7]}],
    )
    columns = ["filename.a", "filepath[0]", "dir0.b", "dir1[0]", "suffix"]
    spec = ScanSpec([str(tmp_path)], "json", columns=columns)
    assert kinds(spec) == [Kind.MEMBER, Kind.ELEMENT, Kind.MEMBER, Kind.ELEMENT, Kind.FILE]
    assert rows(scan(tmp_path, columns=columns)) == [
        {"filename.a": "m", "filepath[0]": "p0", "dir0.b": 5, "dir1[0]": 7, "suffix": "json"}
    ]


def test_provided_implicit_cols(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testProvidedImplicitCols: implicit columns renamed."""
    path = write_json(tmp_path / "d0" / "f.json", [{"a": 1}])
    provided = pa.schema(
        [
            pa.field("a", pa.int32()),
            marked("myFqn", "fqn", nullable=False),
            marked("myFilePath", "FILEPATH"),
            marked("myFileName", "filename", nullable=False),
            marked("mySuffix", "suffix", nullable=False),
            marked("myDir", "dir0"),
        ]
    )
    table = scan(tmp_path, provided_schema=provided)
    assert table.schema.names == ["a", "myFqn", "myFilePath", "myFileName", "mySuffix", "myDir"]
    assert rows(table) == [
        {
            "a": 1,
            "myFqn": str(path),
            "myFilePath": str(tmp_path / "d0"),
            "myFileName": "f.json",
            "mySuffix": "json",
            "myDir": "d0",
        }
    ]


def test_provided_implicit_matches_project(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testProvidedImplicitMatchesProject: fqn, filePath, dir0."""
    path = write_json(tmp_path / "d0" / "f.json", [{"a": 1}])
    provided = pa.schema(
        [
            pa.field("a", pa.int32()),
            marked("fqn", "fqn", nullable=False),
            marked("filePath", "FILEPATH", nullable=False),
            marked("dir0", "dir0"),
        ]
    )
    table = scan(tmp_path, provided_schema=provided)
    assert table.schema.names == ["a", "fqn", "filePath", "dir0"]
    assert rows(table) == [
        {"a": 1, "fqn": str(path), "filePath": str(tmp_path / "d0"), "dir0": "d0"}
    ]


def refused(root: Path, provided_field: pa.Field, message: str) -> None:
    write_json(root / "d0" / "f.json", [{"a": 1}])
    with pytest.raises(InvalidScanSpec, match=message):
        scan(root, provided_schema=pa.schema([provided_field]))


def test_provided_implicit_col_type_conflict(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testProvidedImplicitColTypeConflict: fqn as int."""
    refused(tmp_path, marked("myFqn", "fqn", pa.int32()), "wrong type int32")


def test_provided_implicit_col_mode_conflict(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testProvidedImplicitColModeConflict: fqn as an array."""
    refused(tmp_path, marked("myFqn", "fqn", pa.list_(pa.string())), "wrong type list")


def test_provided_partition_col_type_conflict(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testProvidedPartitionColTypeConflict: dir0 as int."""
    refused(tmp_path, marked("myDir", "dir0", pa.int32()), "wrong type int32")


def test_provided_partition_col_mode_conflict(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testProvidedPartitionColModeConflict: dir0 not nullable."""
    refused(tmp_path, marked("myDir", "dir0", nullable=False), "wrong type: not nullable")


def test_provided_undefined_implicit_col(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testProvidedUndefinedImplicitCol: a bogus marker."""
    refused(tmp_path, marked("myDir", "bogus"), "references an undefined implicit column 'bogus'")


def test_implicit_only(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testImplicitOnly: nothing is decoded; the records
    are still judged, as reading data columns judges them (a malformed line is a bad record)."""
    path = write_json(tmp_path / "f.json", [{"a": 1}, {"a": 2}, "{not json"])
    spec = ScanSpec([str(tmp_path)], "json", columns=["fqn", "filename"])
    assert plan_scan(spec).decoded_fields == ()
    with pytest.raises(BadRecord, match="line 3: malformed json"):
        scan(tmp_path, columns=["fqn", "filename"])
    table = scan(tmp_path, columns=["fqn", "filename"], on_error="skip")
    assert rows(table) == [{"fqn": str(path), "filename": "f.json"}] * 2
    nulled = scan(tmp_path, columns=["fqn", "filename"], on_error="null")
    assert rows(nulled) == [{"fqn": str(path), "filename": "f.json"}] * 3


def test_implicit_only_wildcard(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testImplicitOnlyWildcard: fqn, *, filename."""
    path = write_json(tmp_path / "f.json", [{"a": 1}])
    table = scan(tmp_path, columns=["fqn", "*", "filename"])
    assert rows(table) == [{"fqn": str(path), "a": 1, "filename": "f.json"}]


def test_partition_expansion_placement(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testPartitionExpansionPlacement: dirN after table columns."""
    write_json(tmp_path / "p" / "q" / "f.json", [{"a": 1, "f": 2}])
    table = scan(tmp_path)
    assert types(table) == {"a": "int64", "f": "int64", "dir0": "string", "dir1": "string"}


def test_implicit_with_defined_schema(tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testImplicitWithDefinedSchema."""
    path = write_json(tmp_path / "p" / "q" / "r" / "f.json", [{"a": 1, "b": 2, "c": "x"}])
    provided = pa.schema(
        [
            pa.field("a", pa.int32()),
            pa.field("b", pa.int64()),
            pa.field("c", pa.string()),
            marked("filename", "filename", nullable=False),
            marked("filepath", "filepath", nullable=False),
            marked("dir0", "dir0"),
            marked("dir2", "dir2"),
        ]
    )
    columns = ["a", "b", "c", "filename", "filepath", "dir0", "dir2"]
    table = scan(tmp_path, columns=columns, provided_schema=provided)
    assert table.schema.equals(provided)
    assert rows(table) == [
        {
            "a": 1,
            "b": 2,
            "c": "x",
            "filename": "f.json",
            "filepath": str(path.parent),
            "dir0": "p",
            "dir2": "r",
        }
    ]


def test_hive_partitions_are_typed_columns_after_the_table_columns(tmp_path: Path) -> None:
    write_json(tmp_path / "year=2023" / "city=Paris" / "a.json", [{"n": 1}])
    write_json(tmp_path / "year=2024" / "city=Oslo" / "b.json", [{"n": 2}])
    table = scan(tmp_path, partitioning="hive")
    assert types(table) == {"n": "int64", "year": "int64", "city": "string"}
    assert rows(table) == [
        {"n": 1, "year": 2023, "city": "Paris"},
        {"n": 2, "year": 2024, "city": "Oslo"},
    ]
    provided = pa.schema([("year", pa.string())])
    assert types(
        scan(tmp_path, partitioning="hive", columns=["YEAR"], provided_schema=provided)
    ) == {"YEAR": "string"}


def test_headerless_text_refuses_named_columns(tmp_path: Path) -> None:
    (tmp_path / "f.csv").write_text("1,2\n")
    with pytest.raises(InvalidScanSpec, match="use columns\\[n\\]"):
        scan(tmp_path, "csv", columns=["a"])
