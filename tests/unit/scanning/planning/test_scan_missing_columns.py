"""Columns a file lacks: Drill's TestMissingColumnLoader cases.

Drill's "required" columns are non-nullable fields of the provided schema:
where a file lacks them they take the field's ``default`` metadata, or the
type's empty value; nullable columns are null.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from connect_plugin.errors import InvalidScanSpec, MissingColumn
from connect_plugin.scanning import ScanOptions, ScanSpec, plan_scan
from connect_plugin.scanning.request.options import MissingColumns
from tests.unit.scanning.scan_checks import rows, scan, types, write_json, write_parquet


def test_basics(tmp_path: Path) -> None:
    """Drill TestMissingColumnLoader.testBasics: unspecified, optional, required and array columns."""
    write_json(tmp_path / "f.json", [{"k": 1}, {"k": 2}])
    provided = pa.schema(
        [
            pa.field("specifiedOpt", pa.string()),
            pa.field("specifiedReq", pa.string(), nullable=False),
            pa.field("specifiedArray", pa.list_(pa.string()), nullable=False),
        ]
    )
    columns = ["unspecified", "specifiedOpt", "specifiedReq", "specifiedArray"]
    table = scan(tmp_path, columns=columns, provided_schema=provided)
    assert types(table) == {
        "unspecified": "string",
        "specifiedOpt": "string",
        "specifiedReq": "string",
        "specifiedArray": "list<item: string>",
    }
    assert (
        rows(table)
        == [{"unspecified": None, "specifiedOpt": None, "specifiedReq": "", "specifiedArray": []}]
        * 2
    )


def test_empty(tmp_path: Path) -> None:
    """Drill TestMissingColumnLoader.testEmpty: nothing missing, nothing added."""
    write_json(tmp_path / "f.json", [{"a": 1, "b": "x"}])
    table = scan(tmp_path, columns=["a", "b"])
    assert rows(table) == [{"a": 1, "b": "x"}]


def test_custom_null_type(tmp_path: Path) -> None:
    """Drill TestMissingColumnLoader.testCustomNullType: the type of the unknown is nullable string.

    Drill lets a reader choose it (nullable VARCHAR for csv); here it is
    always a nullable string, in every format.
    """
    write_json(tmp_path / "f.json", [{"a": 1}, {"a": 2}])
    (tmp_path / "t.csv").write_text("a\n1\n")
    for file_format, path in (("json", tmp_path / "f.json"), ("csv", tmp_path / "t.csv")):
        options = {"header": "true"} if file_format == "csv" else {}
        table = scan(path, file_format, columns=["unspecified"], options=options)
        field = table.schema.field("unspecified")
        assert field.type == pa.string()
        assert field.nullable
        assert set(table.column("unspecified").to_pylist()) == {None}


def test_default_value(tmp_path: Path) -> None:
    """Drill TestMissingColumnLoader.testDefaultValue: required columns take their default."""
    write_json(tmp_path / "f.json", [{"k": 1}, {"k": 2}])
    provided = pa.schema(
        [
            pa.field("int", pa.int32(), nullable=False, metadata={"default": "10"}),
            pa.field("str", pa.string(), nullable=False, metadata={"default": "foo"}),
            pa.field("dub", pa.float64(), nullable=False, metadata={"default": "20.0"}),
        ]
    )
    table = scan(tmp_path, columns=["int", "str", "dub"], provided_schema=provided)
    assert rows(table) == [{"int": 10, "str": "foo", "dub": 20.0}] * 2


def test_default_value_that_does_not_parse_is_refused(tmp_path: Path) -> None:
    write_json(tmp_path / "f.json", [{"k": 1}])
    provided = pa.schema([pa.field("n", pa.int32(), nullable=False, metadata={"default": "x"})])
    with pytest.raises(InvalidScanSpec, match="default value b'x' is not a int32"):
        scan(tmp_path, provided_schema=provided)


def test_vector_cache(tmp_path: Path) -> None:
    """Drill TestMissingColumnLoader.testVectorCache: a missing column keeps the type other files gave.

    Drill reuses the vectors of an earlier reader; here the schema settled
    from all files gives the second file's missing columns their types.
    """
    first = pa.table(
        {
            "req": pa.array([1.5], pa.float64()),
            "opt": pa.array([None], pa.float64()),
            "rep": pa.array([[1.0]], pa.list_(pa.float64())),
        }
    )
    write_parquet(tmp_path / "1.parquet", first)
    write_parquet(tmp_path / "2.parquet", pa.table({"k": [1, 2]}))
    table = scan(tmp_path, "parquet", columns=["req", "opt", "rep", "unk"])
    assert types(table) == {
        "req": "double",
        "opt": "double",
        "rep": "list<element: double>",
        "unk": "string",
    }
    assert rows(table)[1:] == [{"req": None, "opt": None, "rep": None, "unk": None}] * 2


def test_all_modes(tmp_path: Path) -> None:
    """Drill TestMissingColumnLoader.testAllModes: defaults apply to required columns only."""
    write_json(tmp_path / "f.json", [{"k": 1}, {"k": 2}])
    provided = pa.schema(
        [
            pa.field("intReq", pa.int32(), nullable=False, metadata={"default": "10"}),
            pa.field("strReq", pa.string(), nullable=False, metadata={"default": "foo"}),
            pa.field("dubReq", pa.float64(), nullable=False),
            pa.field("intOpt", pa.int32(), metadata={"default": "20"}),
            pa.field("strOpt", pa.string(), metadata={"default": "bar"}),
            pa.field("dubOpt", pa.float64()),
        ]
    )
    table = scan(tmp_path, columns=provided.names, provided_schema=provided)
    assert table.schema.equals(provided)
    assert (
        rows(table)
        == [
            {
                "intReq": 10,
                "strReq": "foo",
                "dubReq": 0.0,
                "intOpt": None,
                "strOpt": None,
                "dubOpt": None,
            }
        ]
        * 2
    )


def test_required_columns_fill_nulls_inside_files_too(tmp_path: Path) -> None:
    write_json(tmp_path / "f.json", [{"n": 1}, {"n": None}, {}])
    provided = pa.schema([pa.field("n", pa.int64(), nullable=False, metadata={"default": "-1"})])
    assert scan(tmp_path, provided_schema=provided).column("n").to_pylist() == [1, -1, -1]


def test_empty_values_of_temporal_and_decimal_types(tmp_path: Path) -> None:
    write_json(tmp_path / "f.json", [{"k": 1}])
    provided = pa.schema(
        [
            pa.field("d", pa.date32(), nullable=False),
            pa.field("t", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("x", pa.decimal128(5, 2), nullable=False),
            pa.field("s", pa.struct([pa.field("i", pa.int8(), nullable=False)]), nullable=False),
        ]
    )
    row = rows(scan(tmp_path, columns=provided.names, provided_schema=provided))[0]
    assert str(row["d"]) == "1970-01-01"
    assert row["t"].isoformat() == "1970-01-01T00:00:00+00:00"
    assert str(row["x"]) == "0.00"
    assert row["s"] == {"i": 0}


def test_missing_columns_error_names_the_column_and_the_columns_there_are(
    tmp_path: Path,
) -> None:
    write_json(tmp_path / "a.json", [{"id": 1, "amount": 2.5}])
    typo = ScanSpec([str(tmp_path)], "json", columns=["id", "amuont"], missing_columns="error")
    with pytest.raises(MissingColumn, match=r"'amuont'.*the columns are: id, amount"):
        plan_scan(typo)
    assert ScanSpec.from_json(typo.to_json()).missing_columns is MissingColumns.ERROR
    nulls = plan_scan(ScanSpec([str(tmp_path)], "json", columns=["id", "amuont"]))
    assert [c.name for c in nulls.columns] == ["id", "amuont"]
    given = pa.schema([("amuont", pa.float64())])
    declared = ScanSpec(
        [str(tmp_path)], "json", columns=["amuont"], provided_schema=given, missing_columns="error"
    )
    assert [c.name for c in plan_scan(declared).columns] == ["amuont"]


def test_missing_columns_from_sql_options() -> None:
    options = ScanOptions.parse({"path": "/d", "format": "json", "missing_columns": "ERROR"})
    assert options.to_spec().missing_columns is MissingColumns.ERROR
    polars = ScanOptions.parse({"path": "/d", "format": "json", "missing_columns": "raise"})
    assert polars.missing_columns is MissingColumns.ERROR
    with pytest.raises(InvalidScanSpec, match="'missing_columns' must be one of null, error"):
        ScanOptions.parse({"path": "/d", "format": "json", "missing_columns": "fail"})
