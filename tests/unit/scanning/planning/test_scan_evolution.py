"""Schema evolution modes: add_new_columns, fail_on_new_columns, rescue and none."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow as pa
import pytest

from connect_plugin.errors import InvalidScanSpec, SchemaEvolutionError
from connect_plugin.scanning import Evolution, ScanSpec, clear_schema_cache, plan_scan
from tests.unit.scanning.scan_checks import rows, scan, types, write_json


@pytest.fixture
def growing(tmp_path: Path) -> Path:
    """A first file, and a second one that brings a new column."""
    clear_schema_cache()
    write_json(tmp_path / "1.json", [{"id": 1, "name": "a"}])
    write_json(tmp_path / "2.json", [{"id": 2, "name": "b", "added": 2.5}])
    return tmp_path


def test_add_new_columns_is_the_default_union(growing: Path) -> None:
    spec = ScanSpec([str(growing)], "json")
    assert spec.evolution is Evolution.ADD_NEW_COLUMNS
    assert not spec.strict
    assert types(scan(growing)) == {"id": "int64", "name": "string", "added": "double"}


def test_fail_on_new_columns_names_the_file_and_the_columns(growing: Path) -> None:
    with pytest.raises(SchemaEvolutionError) as raised:
        scan(growing, evolution="fail_on_new_columns")
    message = str(raised.value)
    assert str(growing / "2.json") in message
    assert "'added'" in message
    assert "the first file" in message


def test_fail_on_new_columns_checks_the_files_against_a_provided_schema(growing: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    with pytest.raises(SchemaEvolutionError, match="'added' that the schema fixed by the provided"):
        scan(growing, provided_schema=schema, evolution="FailOnNewColumns")
    ok = pa.schema([("id", pa.int64()), ("name", pa.string()), ("added", pa.float64())])
    assert scan(growing, provided_schema=ok, evolution="fail_on_new_columns").num_rows == 2


def test_fail_on_new_columns_past_the_sample_fails_while_reading(tmp_path: Path) -> None:
    clear_schema_cache()
    path = write_json(tmp_path / "a.json", [{"id": n} for n in range(200)] + [{"id": 1, "late": 1}])
    spec = ScanSpec([str(tmp_path)], "json", evolution="fail_on_new_columns", sample_bytes=64)
    assert [f.name for f in plan_scan(spec).table.fields] == ["id"]
    with pytest.raises(SchemaEvolutionError, match=rf"{path} .*'late'"):
        scan(tmp_path, evolution="fail_on_new_columns", sample_bytes=64)


def test_rescue_fixes_the_first_file_and_keeps_the_rest_in_rescued_data(growing: Path) -> None:
    table = scan(growing, evolution="rescue")
    assert types(table) == {"id": "int64", "name": "string", "_rescued_data": "string"}
    assert [None if t is None else json.loads(t) for t in table.column(2).to_pylist()] == [
        None,
        {"added": 2.5, "_file_path": str(growing / "2.json")},
    ]


def test_none_ignores_new_columns_and_is_what_strict_means(
    growing: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        table = scan(growing, evolution="none")
    assert rows(table) == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    assert "'added'" in caplog.text
    assert ScanSpec([str(growing)], "json", strict=True).evolution is Evolution.NONE
    assert ScanSpec([str(growing)], "json", evolution="none").strict
    spec = ScanSpec([str(growing)], "json", strict=True)
    assert ScanSpec.from_json(spec.to_json()) == spec


def test_strict_contradicting_another_mode_is_refused() -> None:
    with pytest.raises(InvalidScanSpec, match="strict=True means evolution='none'"):
        ScanSpec(["/d"], "json", strict=True, evolution="rescue")
    with pytest.raises(InvalidScanSpec, match="evolution must be one of add_new_columns"):
        ScanSpec(["/d"], "json", evolution="sometimes")
