"""Json as people write it: lines, top-level arrays and documents, under every scan rule."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connect_plugin.errors import BadRecord, InvalidScanSpec, SchemaEvolutionError
from connect_plugin.scanning import ScanOptions, ScanReader, ScanSpec, plan_scan
from connect_plugin.scanning.formats import FileFormat
from connect_plugin.scanning.formats.json import JsonFormat
from connect_plugin.scanning.formats.records import Reject
from connect_plugin.scanning.reading import scanner
from tests.json_layouts import RECORDS, WRITERS, as_array, as_documents, as_lines
from tests.unit.scanning.scan_checks import read, rows, scan, types, write_text


def refuse(*_: Any) -> Iterator[pa.RecordBatch]:
    raise AssertionError("this path must not be taken")


class Rejected:
    def __init__(self) -> None:
        self.rejects: list[Reject] = []

    def write(self, reject: Reject) -> None:
        self.rejects.append(reject)


@pytest.mark.parametrize("layout", list(WRITERS))
def test_each_layout_alone_gives_every_record_on_the_columnar_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    monkeypatch.setattr(scanner, "row_batches", refuse)
    write_text(tmp_path / "a.json", WRITERS[layout](RECORDS))
    table = scan(tmp_path)
    assert rows(table) == RECORDS
    assert types(table)["items"] == "list<element: struct<sku: string, n: int64>>"


@pytest.mark.parametrize("layout", list(WRITERS))
def test_small_blocks_cut_records_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    monkeypatch.setattr(FileFormat, "block_bytes", 64)
    records = [{"id": i, "text": "x" * (i * 7), "m": {"k": [i, i]}} for i in range(30)]
    write_text(tmp_path / "a.json", WRITERS[layout](records))
    assert rows(scan(tmp_path, max_rows=7)) == records
    assert scan(tmp_path, columns=[]).num_rows == len(records)


def test_all_layouts_mixed_in_one_folder_with_drifting_schemas(tmp_path: Path) -> None:
    write_text(tmp_path / "1.json", as_lines([{"id": 1, "v": 1}]))
    write_text(tmp_path / "2.json", as_array([{"id": 2, "v": 2.5, "tag": "t"}]))
    write_text(tmp_path / "3.json", as_documents([{"id": 3, "extra": {"a": True}}]))
    table = scan(tmp_path, columns=["*", "filename"])
    assert types(table) == {
        "id": "int64", "v": "double", "tag": "string",
        "extra": "struct<a: bool>", "filename": "string",
    }  # fmt: skip
    assert rows(table) == [
        {"id": 1, "v": 1.0, "tag": None, "extra": None, "filename": "1.json"},
        {"id": 2, "v": 2.5, "tag": "t", "extra": None, "filename": "2.json"},
        {"id": 3, "v": None, "tag": None, "extra": {"a": True}, "filename": "3.json"},
    ]


def test_a_type_conflict_across_layouts_names_both_files(tmp_path: Path) -> None:
    write_text(tmp_path / "1.json", as_array([{"id": 1}]))
    write_text(tmp_path / "2.json", as_documents([{"id": "one"}]))
    with pytest.raises(Exception, match=r"1\.json.*2\.json|2\.json.*1\.json"):
        scan(tmp_path)


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        ('[{"id": 1}, 5, {"id": 3}]', "line 1 (byte offset 12)", "an array element that is a number"),
        ('[\n {"id": 1},\n [1, 2],\n {"id": 3}\n]', "line 3 (byte offset 15)", "is an array, not"),
        ('[{"id": 1}, {"id": 2,}, {"id": 3}]', "line 1 (byte offset 12)", "malformed json"),
        ('{\n "id": 1\n}\n"text"\n{"id": 3}', "line 4 (byte offset 13)", "top-level value that is a string"),
        ('{\n "id": 1\n}\n[{"id": 2}]\n{"id": 3}', "line 4 (byte offset 13)", "top-level array among"),
        ('{"id": 1}\n{"id": 2\n{"id": 3}\n', "line 2", "malformed json"),
        ('{"id": 1}\n7\n{"id": 3}\n', "line 2", "the record is a number"),
    ],
)
def test_bad_records_in_each_layout_under_each_policy(
    tmp_path: Path, text: str, where: str, reason: str
) -> None:
    path = write_text(tmp_path / "a.json", text)
    with pytest.raises(BadRecord, match=re.escape(f"file {path}, {where}: ") + f".*{reason}"):
        scan(tmp_path)
    skipped = scan(tmp_path, on_error="skip", columns=["id"])
    assert skipped.column("id").to_pylist() == [1, 3]
    sink = Rejected()
    spec = ScanSpec([str(tmp_path)], "json", on_error="null", columns=["id"])
    nulled = read(spec, ScanReader(plan_scan(spec), rejects=sink))
    assert nulled.column("id").to_pylist() == [1, None, 3]
    assert [f"line {r.line}" + ("" if r.offset is None else f" (byte offset {r.offset})")
            for r in sink.rejects] == [where]  # fmt: skip
    assert reason in sink.rejects[0].reason


def test_an_object_outside_the_array_is_a_bad_record_only_when_arrays_are_asked_for(
    tmp_path: Path,
) -> None:
    write_text(tmp_path / "a.json", '[{"id": 1}]\n{"id": 2}')
    with pytest.raises(BadRecord, match="object outside a top-level array"):
        scan(tmp_path, options={"json_format": "array"})
    assert rows(scan(tmp_path, options={"json_format": "array"}, on_error="skip")) == [{"id": 1}]


def test_a_file_of_scalars_is_bad_records_never_rows_without_columns(tmp_path: Path) -> None:
    write_text(tmp_path / "a.json", "[1, 2, 3]")
    write_text(tmp_path / "b.json", "4\n5\n")
    with pytest.raises(BadRecord, match="not an object"):
        scan(tmp_path)
    skipped = scan(tmp_path, on_error="skip")
    assert (skipped.num_rows, skipped.num_columns) == (0, 0)
    with pytest.raises(BadRecord, match="not an object"):
        scan(tmp_path, columns=[])
    assert scan(tmp_path, columns=[], on_error="skip").num_rows == 0
    assert scan(tmp_path, columns=[], on_error="null").num_rows == 5


def test_a_forced_layout_that_does_not_fit_is_a_bad_record_not_a_guess(tmp_path: Path) -> None:
    write_text(tmp_path / "a.json", as_array(RECORDS))
    with pytest.raises(BadRecord, match="line 1: the record is an array, not a json object"):
        scan(tmp_path, options={"json_format": "lines"})
    with pytest.raises(BadRecord, match="top-level array among documents"):
        scan(tmp_path, options={"jSON_format": "Documents"})


@pytest.mark.parametrize("text", ["[]", "  [ ]\n", "", "\n\n"])
def test_an_empty_array_or_file_has_no_rows(tmp_path: Path, text: str) -> None:
    write_text(tmp_path / "a.json", text)
    write_text(tmp_path / "b.json", as_lines([{"id": 1}]))
    assert rows(scan(tmp_path)) == [{"id": 1}]
    assert scan(tmp_path, columns=[]).num_rows == 1


@pytest.mark.parametrize("layout", ["array", "documents, pretty"])
def test_counts_under_null_decode_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    """Under ``null`` every record is a row, bad or not: no data columns, nothing to judge."""
    monkeypatch.setattr(JsonFormat, "native_batches", refuse)
    monkeypatch.setattr(scanner, "row_batches", refuse)
    write_text(tmp_path / "a" / "x.json", WRITERS[layout](RECORDS * 5))
    table = scan(tmp_path, columns=["dir0", "filename"], on_error="null")
    assert table.num_rows == 15
    assert set(table.column("dir0").to_pylist()) == {"a"}


@pytest.mark.parametrize("layout", ["array", "documents, pretty"])
def test_provided_and_strict_schemas_and_limits(tmp_path: Path, layout: str) -> None:
    records = [{"id": i, "v": i / 2, "s": "x" * 50} for i in range(100)]
    write_text(tmp_path / "a.json", WRITERS[layout](records))
    schema = pa.schema([("v", pa.float32()), ("id", pa.int32())])
    table = scan(tmp_path, provided_schema=schema, strict=True, max_rows=9, max_bytes=2048)
    assert types(table) == {"v": "float", "id": "int32"}
    assert table.column("id").to_pylist() == list(range(100))


@pytest.mark.parametrize("layout", ["array", "documents, pretty"])
@pytest.mark.parametrize("row_path", [False, True])
def test_rescued_data_on_the_new_layouts(tmp_path: Path, layout: str, row_path: bool) -> None:
    records: list[Any] = [{"id": 1}, {"id": 2, "extra": [1]}, {"id": "three"}]
    if row_path:
        records.insert(1, {"id": 9, "flip": 1})
        records.insert(2, {"id": 10, "flip": "one"})
    path = write_text(tmp_path / "a.json", WRITERS[layout](records))
    table = scan(tmp_path, provided_schema=pa.schema([("id", pa.int64())]), evolution="rescue")
    rescued = [None if t is None else json.loads(t) for t in table.column("_rescued_data").to_pylist()]
    assert table.column("id").to_pylist()[-1] is None
    assert {"extra": [1], "_file_path": str(path)} in rescued
    assert rescued[-1] == {"id": "three", "_file_path": str(path)}


def test_fail_on_new_columns_past_the_sample_names_the_record(tmp_path: Path) -> None:
    records = [{"id": i, "pad": "p" * 40} for i in range(200)] + [{"id": 0, "late": 1}]
    write_text(tmp_path / "a.json", as_documents(records))
    with pytest.raises(SchemaEvolutionError, match="'late'"):
        scan(tmp_path, evolution="fail_on_new_columns", sample_bytes=1024)
    table = scan(tmp_path, evolution="none", sample_bytes=1024)
    assert table.num_rows == 201
    assert "late" not in table.schema.names


@pytest.mark.parametrize("layout", ["array", "documents, pretty"])
def test_compressed_files_of_the_new_layouts(tmp_path: Path, layout: str) -> None:
    (tmp_path / "a.json.gz").write_bytes(gzip.compress(WRITERS[layout](RECORDS).encode()))
    assert rows(scan(tmp_path)) == RECORDS
    assert scan(tmp_path, columns=[]).num_rows == 3


def test_implicit_and_partition_columns_on_an_array(tmp_path: Path) -> None:
    write_text(tmp_path / "2024" / "05" / "a.json", as_array([{"id": 1}, {"id": 2}]))
    table = scan(tmp_path, columns=["id", "dir0", "dir1", "suffix"])
    assert rows(table) == [
        {"id": 1, "dir0": "2024", "dir1": "05", "suffix": "json"},
        {"id": 2, "dir0": "2024", "dir1": "05", "suffix": "json"},
    ]


def test_the_option_is_checked_and_travels_as_text(tmp_path: Path) -> None:
    with pytest.raises(InvalidScanSpec, match="option 'json_format' must be one of auto, lines"):
        ScanSpec([str(tmp_path)], "json", options={"json_format": "xml"})
    with pytest.raises(InvalidScanSpec, match="not an option of the csv format"):
        ScanSpec([str(tmp_path)], "csv", options={"json_format": "array"})
    spec = ScanOptions.parse({"path": str(tmp_path), "format": "json", "JSON_FORMAT": "Array"}).to_spec()
    assert ScanSpec.from_json(spec.to_json()).option("json_format") == "array"


ANCHOR = {"a": 0, "b": "x"}
"""A first record that settles what ``auto`` sees: documents (pretty-printed, or followed on
its line), or lines (alone on its line), where a first item ``[...]`` would make an array."""


def expected_units(layout: str, items: list[Any]) -> tuple[int, int]:
    """Objects and bad records of a file: among documents, scalars side by side are one."""
    objects = sum(isinstance(item, dict) for item in items)
    if not layout.startswith("documents"):
        return objects, len(items) - objects
    bad = 0
    previous_scalar = False
    for item in items:
        scalar = not isinstance(item, (dict, list))
        bad += isinstance(item, list) or (scalar and not previous_scalar)
        previous_scalar = scalar
    return objects, bad


layouts = st.sampled_from(["lines", "array", "array, pretty", "documents, pretty", "documents, on one line"])
junk = st.sampled_from([1, "s", None, True, [1], [{"a": 1}], []])
entries = st.one_of(
    st.fixed_dictionaries({}, optional={"a": st.integers(0, 9), "b": st.text("xy", max_size=2)}),
    junk,
)
projections = st.sampled_from([None, ["a"], ["b", "filename"], ["filename"], []])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    files=st.lists(st.tuples(layouts, st.lists(entries, max_size=5)), min_size=1, max_size=3),
    columns=projections,
    on_error=st.sampled_from(["skip", "null"]),
)
def test_every_projection_judges_records_as_reading_data_columns_does(
    tmp_path_factory: pytest.TempPathFactory,
    files: list[tuple[str, list[Any]]],
    columns: list[str] | None,
    on_error: str,
) -> None:
    """Whatever the projection, each row stands for an object (or, under ``null``, a bad
    record as a row of nulls), and has a column unless the projection has none or is the
    wildcard and no object has a field."""
    folder = tmp_path_factory.mktemp("layouts")
    objects = bad = 0
    for number, (layout, items) in enumerate(files):
        if not layout.startswith("array"):
            items = [ANCHOR, *items]
        write_text(folder / f"{number}.json", WRITERS[layout](items))
        found_objects, found_bad = expected_units(layout, items)
        objects += found_objects
        bad += found_bad
    spec = ScanSpec([str(folder)], "json", columns=columns, on_error=on_error)
    reader = ScanReader(plan_scan(spec))
    table = read(spec, reader)
    assert table.num_rows == objects + (bad if on_error == "null" else 0)
    assert reader.bad_records == (0 if reader.counts_only else bad)
    if columns in ([], ["filename"]):
        return
    if table.num_columns == 0:
        assert columns is None
        assert all(not item for _, items in files for item in items if isinstance(item, dict))
