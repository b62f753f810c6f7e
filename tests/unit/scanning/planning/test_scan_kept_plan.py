"""A scan's first plan kept in a file: later plans keep its columns over the files there are."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from connect_plugin.errors import SchemaEvolutionError
from connect_plugin.scanning import ScanReader, ScanSpec, clear_schema_cache, plan_scan, predicates
from connect_plugin.scanning.choices import Partitioning
from connect_plugin.scanning.planning.kept import kept_plan, planned_text, replanned
from tests.unit.scanning.scan_checks import read, rows, write_json


@pytest.fixture
def months(tmp_path: Path) -> Path:
    clear_schema_cache()
    root = tmp_path / "data"
    write_json(root / "month=3" / "a.json", [{"id": 1, "qty": 5}])
    write_json(root / "month=4" / "b.json", [{"id": 2, "name": "b"}])
    return root


def change(root: Path) -> None:
    (root / "month=3" / "a.json").unlink()
    write_json(root / "month=4" / "c.json", [{"id": 3, "extra": "e"}])


def spec_of(root: Path, **options: object) -> ScanSpec:
    return ScanSpec([str(root)], "json", partitioning=Partitioning.HIVE, **options)  # type: ignore[arg-type]


def test_a_later_plan_keeps_the_first_plans_columns(months: Path, tmp_path: Path) -> None:
    kept = str(tmp_path / "kept.json")
    first = kept_plan(spec_of(months), kept)
    assert first.schema.names == ["id", "qty", "name", "month"]
    change(months)
    assert plan_scan(spec_of(months)).schema.names == ["id", "name", "extra", "month"]
    pruned = spec_of(months, file_filter=predicates.PartitionFilter("eq", "month", 4))
    later = kept_plan(pruned, kept)
    assert later.schema == first.schema
    assert [f.path.rsplit("/", 1)[1] for f in later.files] == ["b.json", "c.json"]
    assert sorted(rows(read(pruned, ScanReader(later))), key=lambda r: r["id"]) == [
        {"id": 2, "qty": None, "name": "b", "month": 4},
        {"id": 3, "qty": None, "name": None, "month": 4},
    ]


def test_rescue_keeps_the_gone_first_files_columns(months: Path, tmp_path: Path) -> None:
    kept = str(tmp_path / "kept.json")
    spec = spec_of(months, evolution="rescue")
    assert kept_plan(spec, kept).schema.names == ["id", "qty", "month", "_rescued_data"]
    change(months)
    later = kept_plan(spec, kept)
    found = sorted(rows(read(spec, ScanReader(later))), key=lambda r: r["id"])
    assert [(r["id"], r["qty"]) for r in found] == [(2, None), (3, None)]
    rescued = [json.loads(r["_rescued_data"]) for r in found]
    assert [{k: v for k, v in r.items() if k != "_file_path"} for r in rescued] == [
        {"name": "b"},
        {"extra": "e"},
    ]


def test_the_text_keeps_types_implicit_columns_and_hive_keys(tmp_path: Path) -> None:
    write_json(tmp_path / "k=1" / "t=x" / "a.json", [{"id": 1, "m": {"a": [1.5]}}])
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("where", pa.string(), metadata={"connect_plugin.implicit": "fqn"}),
        ]
    )
    spec = ScanSpec([str(tmp_path)], "json", partitioning=Partitioning.HIVE, provided_schema=schema)
    plan = plan_scan(spec)
    again = replanned(spec, planned_text(plan))
    assert again is not None
    assert again.table == plan.table
    assert again.partitions == plan.partitions
    assert again.columns == plan.columns


def test_a_plan_kept_for_another_spec_is_not_used(months: Path, tmp_path: Path) -> None:
    kept = str(tmp_path / "kept.json")
    kept_plan(spec_of(months), kept)
    change(months)
    other = spec_of(months, columns=["id", "extra"])
    assert replanned(other, (tmp_path / "kept.json").read_text()) is None
    assert kept_plan(other, kept).schema.names == ["id", "extra"]
    assert replanned(replace(spec_of(months), max_rows=7), (tmp_path / "kept.json").read_text())


def test_a_plan_that_cannot_be_kept_is_planned_each_time(months: Path, tmp_path: Path) -> None:
    nowhere = str(tmp_path / "no-folder" / "kept.json")
    assert kept_plan(spec_of(months), nowhere).schema.names == ["id", "qty", "name", "month"]
    change(months)
    assert kept_plan(spec_of(months), nowhere).schema.names == ["id", "name", "extra", "month"]


def test_an_unreadable_kept_plan_is_planned_anew(months: Path, tmp_path: Path) -> None:
    kept = tmp_path / "kept.json"
    kept.write_text("{not json")
    assert kept_plan(spec_of(months), str(kept)).schema.names == ["id", "qty", "name", "month"]
    assert kept.read_text() == "{not json"


def test_fail_on_new_columns_fails_on_a_new_files_column(months: Path, tmp_path: Path) -> None:
    kept = str(tmp_path / "kept.json")
    spec = ScanSpec([str(months / "month=3")], "json", evolution="fail_on_new_columns")  # type: ignore[arg-type]
    assert kept_plan(spec, kept).schema.names == ["id", "qty"]
    write_json(months / "month=3" / "c.json", [{"id": 3, "extra": "e"}])
    with pytest.raises(SchemaEvolutionError, match="extra"):
        read(spec, ScanReader(kept_plan(spec, kept)))
