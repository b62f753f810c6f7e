"""The rescued-data column: values that do not fit and fields the schema does not keep."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from connect_plugin.errors import BadRecord, InvalidScanSpec
from connect_plugin.scanning import ScanReader, ScanSpec, plan_scan
from connect_plugin.scanning.reading import scanner
from tests.unit.scanning.scan_checks import (
    read,
    rows,
    scan,
    types,
    write_json,
    write_parquet,
    write_text,
)

R = "_rescued_data"


def rescued(table: pa.Table, column: str = R) -> list[Any]:
    return [None if text is None else json.loads(text) for text in table.column(column).to_pylist()]


def test_fields_outside_a_strict_schema_are_rescued_on_the_columnar_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scanner, "row_batches", None)
    write_json(tmp_path / "a.json", [{"id": 1}, {"id": 2}])
    path = write_json(tmp_path / "b.json", [{"id": 3, "extra": "x", "m": {"k": [1]}}, {"id": 4}])
    table = scan(tmp_path, strict=True, rescued_column=R)
    assert types(table) == {"id": "int64", R: "string"}
    assert table.column("id").to_pylist() == [1, 2, 3, 4]
    assert rescued(table) == [
        None,
        None,
        {"extra": "x", "m": {"k": [1]}, "_file_path": str(path)},
        None,
    ]


def test_a_value_that_does_not_fit_is_rescued_instead_of_failing(tmp_path: Path) -> None:
    path = write_json(tmp_path / "a.json", [{"n": 1}, {"n": "lots"}, {"n": 3, "other": True}])
    schema = pa.schema([("n", pa.int64())])
    with pytest.raises(BadRecord):
        scan(tmp_path, provided_schema=schema, strict=True)
    table = scan(tmp_path, provided_schema=schema, strict=True, rescued_column="leftovers")
    assert rows(table) == [
        {"n": 1, "leftovers": None},
        {"n": None, "leftovers": json.dumps({"n": "lots", "_file_path": str(path)}, separators=(",", ":"))},
        {"n": 3, "leftovers": json.dumps({"other": True, "_file_path": str(path)}, separators=(",", ":"))},
    ]


def test_csv_rescues_extra_header_columns_and_values_on_both_paths(tmp_path: Path) -> None:
    path = write_text(tmp_path / "a.csv", "id,name,note\n1,a,hi\nzwei,b,\n3,c,yo\n")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    table = scan(
        tmp_path,
        "csv",
        provided_schema=schema,
        strict=True,
        rescued_column=R,
        options={"header": "true"},
    )
    assert table.column("id").to_pylist() == [1, None, 3]
    assert rescued(table) == [
        {"note": "hi", "_file_path": str(path)},
        {"id": "zwei", "note": "", "_file_path": str(path)},
        {"note": "yo", "_file_path": str(path)},
    ]


def test_parquet_rescues_columns_and_values_that_do_not_cast(tmp_path: Path) -> None:
    path = write_parquet(
        tmp_path / "a.parquet", pa.table({"n": ["1", "x", "3"], "more": [True, None, False]})
    )
    schema = pa.schema([("n", pa.int64())])
    table = scan(tmp_path, "parquet", provided_schema=schema, strict=True, rescued_column=R)
    assert table.column("n").to_pylist() == [1, None, 3]
    assert rescued(table) == [
        {"more": True, "_file_path": str(path)},
        {"n": "x", "_file_path": str(path)},
        {"more": False, "_file_path": str(path)},
    ]


def test_the_rescued_column_goes_last_unless_named_and_never_into_a_count(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", [{"a": 1, "b": 2}])
    assert scan(tmp_path, columns=["b"], rescued_column=R).column_names == ["b", R]
    named = scan(tmp_path, columns=["_RESCUED_data", "a"], rescued_column=R)
    assert named.column_names == ["_RESCUED_data", "a"]
    assert rescued(named, "_RESCUED_data") == [None]
    counted = scan(tmp_path, columns=[], rescued_column=R)
    assert (counted.num_columns, counted.num_rows) == (0, 1)


def test_without_a_rescued_column_nothing_changes(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", [{"a": 1}, {"a": 2, "b": "x"}])
    spec = ScanSpec([str(tmp_path)], "json", strict=True, sample_bytes=9)
    reader = ScanReader(plan_scan(spec))
    assert not reader.decode.watches_fields
    assert rows(read(spec, reader)) == [{"a": 1}, {"a": 2}]


def test_a_rescued_column_named_like_a_table_column_is_refused(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", [{"a": 1, "_rescued_data": "mine"}])
    with pytest.raises(InvalidScanSpec, match="rescued_column '_rescued_data' is also a column"):
        scan(tmp_path, rescued_column=R)
    with pytest.raises(InvalidScanSpec, match="plain name"):
        ScanSpec([str(tmp_path)], "json", rescued_column="a.b")
