"""``on_error="reject"``: the spec's options and the rejects files Spark's workers write."""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connect_plugin.errors import InvalidScanSpec, ScanError
from connect_plugin.scanning import ScanReader, ScanSpec, plan_scan
from connect_plugin.scanning.reading.rejects import (
    REJECTS_SCHEMA,
    WRITING_FOLDER,
    RejectFiles,
    delete_other_scans,
    rows_written_since,
    snapshot,
)
from connect_plugin.scanning.request import predicates
from connect_plugin.scanning.request.options import OnError, ScanOptions
from tests.unit.scanning.scan_checks import write_text

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def rejecting(folder: Path, rejects: Path, **options: Any) -> ScanSpec:
    rejects.mkdir(exist_ok=True)
    spec = ScanSpec([str(folder)], "json", provided_schema=SCHEMA, on_error="reject", **options)
    return dataclasses.replace(spec, rejects_folder=str(rejects))


def read_all(spec: ScanSpec) -> pa.Table:
    plan = plan_scan(spec)
    sink = RejectFiles.of(spec)
    assert sink is not None
    reader = ScanReader(plan, rejects=sink)
    return pa.Table.from_batches(list(sink.read(reader, plan.files)), schema=reader.schema)


def rejects_in(folder: Path) -> list[dict[str, Any]]:
    files = sorted(folder.glob("*.parquet"))
    tables = [pq.read_table(path) for path in files]
    assert all(table.schema == REJECTS_SCHEMA for table in tables)
    rows = [row for table in tables for row in table.to_pylist()]
    return sorted(rows, key=lambda r: (r["file"], r["line"]))


def test_reject_defaults_to_duckdbs_table_name() -> None:
    assert ScanSpec(["/d"], "json", on_error="reject").rejects_table == "reject_errors"
    assert ScanSpec(["/d"], "json", on_error="skip").rejects_table is None
    spec = ScanSpec(["/d"], "json", on_error="reject", rejects_table="bad_rows")
    assert spec.rejects_table == "bad_rows"
    assert ScanSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize("policy", ["fail", "skip", "null"])
def test_a_rejects_table_needs_the_reject_policy(policy: str) -> None:
    with pytest.raises(
        InvalidScanSpec, match=f"needs on_error='reject' \\(got on_error='{policy}'"
    ):
        ScanSpec(["/d"], "json", on_error=policy, rejects_table="bad_rows")


@pytest.mark.parametrize("name", ["bad rows", "tmp.bad", "1st", "x;drop"])
def test_a_rejects_table_is_a_plain_name(name: str) -> None:
    with pytest.raises(InvalidScanSpec, match="rejects_table must be a plain table name"):
        ScanSpec(["/d"], "json", on_error="reject", rejects_table=name)


def test_sql_options_take_reject_and_the_table_name() -> None:
    options = ScanOptions.parse(
        {"path": "/d", "format": "json", "ON_ERROR": "Reject", "rejects_table": "bad_rows"}
    )
    assert options.on_error is OnError.REJECT
    assert options.reader == {}
    spec = options.to_spec()
    assert (spec.on_error, spec.rejects_table) == (OnError.REJECT, "bad_rows")


def test_the_scan_id_ignores_limits_folder_and_pruning_but_not_what_is_read() -> None:
    spec = ScanSpec(["/d"], "json", on_error="reject", columns=["a"])
    pruned = predicates.from_json({"op": "eq", "column": "dir0", "value": "x"})
    same = dataclasses.replace(
        spec, max_rows=7, max_bytes=1 << 20, rejects_folder="/w/x", file_filter=pruned
    )
    assert same.scan_id == spec.scan_id
    assert ScanSpec.from_json(same.to_json()).scan_id == spec.scan_id
    assert dataclasses.replace(spec, columns=["b"]).scan_id != spec.scan_id
    assert dataclasses.replace(spec, paths=["/e"]).scan_id != spec.scan_id
    assert dataclasses.replace(spec, rejects_table="other").scan_id != spec.scan_id


def test_rejected_records_are_dropped_and_written_one_private_file_per_source_file(
    tmp_path: Path,
) -> None:
    a = write_text(tmp_path / "in" / "a.json", '{"id": 1}\n{"id": "two", "name": "b"}\n{"id": 3}\n')
    b = write_text(tmp_path / "in" / "b.json", '{"id": 4}\n{"id": \n[1, 2]\n')
    spec = rejecting(tmp_path / "in", tmp_path / "rejects", max_rows=1)
    assert read_all(spec).column("id").to_pylist() == [1, 3, 4]
    files = sorted((tmp_path / "rejects").glob("*.parquet"))
    sink = RejectFiles.of(spec)
    assert sink is not None
    assert [f.name for f in files] == sorted(Path(sink.path_of(str(path))).name for path in (a, b))
    assert all(f.name.startswith(spec.scan_id + "-") for f in files)
    assert all(stat.S_IMODE(os.stat(f).st_mode) == 0o600 for f in files)
    rejects = rejects_in(tmp_path / "rejects")
    assert [
        (r["file"], r["line"], r["byte_offset"], r["column_name"], r["error_type"], r["raw_record"])
        for r in rejects
    ] == [
        (str(a), 2, None, "id", "CAST", '{"id": "two", "name": "b"}'),
        (str(b), 2, None, None, "MALFORMED RECORD", '{"id": '),
        (str(b), 3, None, None, "MALFORMED RECORD", "[1, 2]"),
    ]
    messages = [r["error_message"] for r in rejects]
    assert "column 'id'" in messages[0]
    assert "malformed json" in messages[1]
    assert messages[2] == "the record is an array, not a json object"


def test_a_file_read_again_replaces_its_rejects(tmp_path: Path) -> None:
    write_text(tmp_path / "in" / "a.json", '{"id": 1}\n{"id": "x"}\n')
    spec = rejecting(tmp_path / "in", tmp_path / "rejects")
    read_all(spec)
    read_all(spec)
    assert len(rejects_in(tmp_path / "rejects")) == 1
    hidden = [p.name for p in (tmp_path / "rejects").iterdir() if p.name.startswith(".")]
    assert hidden == [WRITING_FOLDER]
    assert list((tmp_path / "rejects" / WRITING_FOLDER).iterdir()) == []
    assert stat.S_IMODE(os.stat(tmp_path / "rejects" / WRITING_FOLDER).st_mode) == 0o700


def test_a_rejects_folder_gone_since_planning_is_an_error_naming_the_table(
    tmp_path: Path,
) -> None:
    """A view's scan whose rejects table was dropped: the folder is never made again."""
    write_text(tmp_path / "in" / "a.json", '{"id": 1}\n{"id": "x"}\n')
    spec = rejecting(tmp_path / "in", tmp_path / "rejects", rejects_table="bad_rows")
    (tmp_path / "rejects").rmdir()
    with pytest.raises(ScanError, match=r"the rejects table \[bad_rows\] of this scan no longer"):
        read_all(spec)
    assert not (tmp_path / "rejects").exists()


def test_the_rejects_of_other_scans_are_deleted_unless_written_since(tmp_path: Path) -> None:
    write_text(tmp_path / "in" / "a.json", '{"id": 1}\n{"id": "x"}\n')
    first = rejecting(tmp_path / "in", tmp_path / "rejects")
    second = dataclasses.replace(first, columns=["id"])
    third = dataclasses.replace(first, columns=["name", "id"])
    folder = str(tmp_path / "rejects")
    read_all(first)
    read_all(second)
    before = snapshot(folder)
    assert len(before) == 2
    read_all(third)
    spark_file = tmp_path / "rejects" / "part-00000-0.snappy.parquet"
    spark_file.write_bytes(b"")
    assert delete_other_scans(folder, frozenset({second.scan_id}), before) == 1
    left = sorted(name.split("-")[0] for name in snapshot(folder))
    assert left == sorted([second.scan_id, third.scan_id])
    assert spark_file.exists()
    assert rows_written_since(folder, before) == 1


def test_a_file_not_read_to_its_end_writes_no_rejects(tmp_path: Path) -> None:
    lines = [f'{{"id": {n}}}' for n in range(50)] + ['{"id": "x"}'] * 3
    write_text(tmp_path / "in" / "a.json", "\n".join(lines) + "\n")
    spec = rejecting(tmp_path / "in", tmp_path / "rejects", max_rows=10)
    plan = plan_scan(spec)
    sink = RejectFiles.of(spec)
    assert sink is not None
    batches = sink.read(ScanReader(plan, rejects=sink), plan.files)
    next(batches)
    batches.close()
    assert list((tmp_path / "rejects").iterdir()) == []


def test_counting_rows_leaves_earlier_rejects_alone(tmp_path: Path) -> None:
    """A projection of no columns judges records, not values: the value that did not cast
    is no reject of its own, and the reading scan's reject stays."""
    write_text(tmp_path / "in" / "a.json", '{"id": 1}\n{"id": "x"}\n')
    spec = rejecting(tmp_path / "in", tmp_path / "rejects")
    read_all(spec)
    counting = dataclasses.replace(spec, columns=[])
    plan = plan_scan(counting)
    sink = RejectFiles.of(counting)
    assert sink is not None
    reader = ScanReader(plan, rejects=sink)
    assert sum(b.num_rows for b in sink.read(reader, plan.files)) == 2
    assert len(rejects_in(tmp_path / "rejects")) == 1


def test_csv_rejects_name_the_column_and_lines_that_are_not_utf8(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.csv").write_bytes(b"id,price\n1,1.5\n2,cheap\n3,\xff\xfe\n")
    (tmp_path / "rejects").mkdir()
    spec = dataclasses.replace(
        ScanSpec([str(folder)], "csv", on_error="reject", options={"header": "true"},
                 provided_schema=pa.schema([("id", pa.int32()), ("price", pa.float64())])),
        rejects_folder=str(tmp_path / "rejects"),
    )  # fmt: skip
    assert read_all(spec).column("id").to_pylist() == [1]
    rejects = rejects_in(tmp_path / "rejects")
    assert [(r["line"], r["column_name"], r["error_type"], r["raw_record"]) for r in rejects] == [
        (3, "price", "CAST", "2,cheap"),
        (4, None, "INVALID ENCODING", "3,\ufffd\ufffd"),
    ]


def test_no_folder_no_rejects_files() -> None:
    assert RejectFiles.of(ScanSpec(["/d"], "json", on_error="reject")) is None


def test_a_record_inside_a_json_array_is_placed_by_its_byte_offset(tmp_path: Path) -> None:
    text = '[{"id": 1}, {"id": "x"}, {"id": 3}]'
    write_text(tmp_path / "in" / "a.json", text)
    spec = rejecting(tmp_path / "in", tmp_path / "rejects")
    assert read_all(spec).column("id").to_pylist() == [1, 3]
    (reject,) = rejects_in(tmp_path / "rejects")
    assert (reject["line"], reject["byte_offset"]) == (1, text.index('{"id": "x"}'))
    assert (reject["column_name"], reject["error_type"]) == ("id", "CAST")
