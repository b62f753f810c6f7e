"""Reading files: the columnar path, the row path it falls back to, bad records and limits."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from connect_plugin.errors import BadRecord, RowTooLarge
from connect_plugin.scanning import (
    ScanReader,
    ScanSpec,
    clear_schema_cache,
    plan_scan,
)
from connect_plugin.scanning.formats import FORMAT_CLASSES, FileFormat
from connect_plugin.scanning.formats.records import Reject
from connect_plugin.scanning.reading import scanner
from connect_plugin.scanning.reading.conform import limit_batches
from tests.unit.scanning.scan_checks import (
    read,
    rows,
    scan,
    types,
    write_json,
    write_parquet,
    write_text,
)


def refuse(*_: Any) -> Iterator[pa.RecordBatch]:
    raise AssertionError("this path must not be taken")


@pytest.fixture
def columnar_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if any file goes through the row path."""
    monkeypatch.setattr(scanner, "row_batches", refuse)


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyarrow parses 256 bytes at a time, so a small file has many blocks."""
    monkeypatch.setattr(FileFormat, "block_bytes", 256)


@pytest.mark.usefixtures("columnar_only")
def test_clean_json_stays_on_the_columnar_path(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", [{"a": 1, "b": "x", "m": {"p": [1, 2]}}, {"a": 2}])
    table = scan(tmp_path)
    assert rows(table) == [
        {"a": 1, "b": "x", "m": {"p": [1, 2]}},
        {"a": 2, "b": None, "m": None},
    ]


def test_a_json_field_that_changes_type_reads_through_the_row_path(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """pyarrow stops at the number; the row path writes it as text, as Spark's json reader does."""
    write_json(tmp_path / "a.json", [{"v": "text"}, {"v": 12}, {"v": {"k": [1]}}, {"v": True}])
    provided = pa.schema([("v", pa.string())])
    with caplog.at_level(logging.INFO):
        table = scan(tmp_path, provided_schema=provided)
    assert table.column("v").to_pylist() == ["text", "12", '{"k":[1]}', "true"]
    assert "reading on row by row" in caplog.text


@pytest.mark.usefixtures("small_blocks")
def test_the_row_path_takes_over_where_the_columnar_path_stopped(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [{"n": i, "pad": "x" * 20} for i in range(40)]
    records.append({"n": 1.5, "pad": "late double"})
    write_json(tmp_path / "a.json", records)
    table = scan(tmp_path, provided_schema=pa.schema([("n", pa.float64())]), columns=["n"])
    assert table.column("n").to_pylist() == [*map(float, range(40)), 1.5]
    with pytest.raises(
        BadRecord, match=r"line 41: column 'n': expected a int64 value, got the num"
    ):
        scan(tmp_path, provided_schema=pa.schema([("n", pa.int64())]), columns=["n"])


def bad_json(path: Path) -> Path:
    text = '{"a": 1}\n\n{"a": \n{"a": "two"}\n[1, 2]\n{"a": 4}\n'
    return write_text(path, text)


def test_bad_records_fail_by_default_naming_file_and_line(tmp_path: Path) -> None:
    path = bad_json(tmp_path / "a.json")
    spec = ScanSpec([str(path)], "json", provided_schema=pa.schema([("a", pa.int64())]))
    with pytest.raises(BadRecord) as caught:
        read(spec)
    assert f"file {path}, line 3: malformed json" in str(caught.value)
    assert "on_error='skip'" in str(caught.value)


def test_skip_drops_bad_records_and_counts_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = bad_json(tmp_path / "a.json")
    spec = ScanSpec(
        [str(path)], "json", provided_schema=pa.schema([("a", pa.int64())]), on_error="skip"
    )
    reader = ScanReader(plan_scan(spec))
    with caplog.at_level(logging.WARNING):
        table = read(spec, reader)
    assert table.column("a").to_pylist() == [1, 4]
    assert reader.bad_records == 3
    assert f"file {path}: 3 bad record(s) skipped (first at line 3" in caplog.text


def test_null_keeps_bad_records_with_null_values(tmp_path: Path) -> None:
    path = bad_json(tmp_path / "a.json")
    schema = pa.schema([("a", pa.int64())])
    spec = ScanSpec(
        [str(path)], "json", provided_schema=schema, on_error="null", columns=["a", "filename"]
    )
    reader = ScanReader(plan_scan(spec))
    table = read(spec, reader)
    assert table.column("a").to_pylist() == [1, None, None, None, 4]
    assert set(table.column("filename").to_pylist()) == {"a.json"}
    assert reader.bad_records == 3


def test_null_nulls_only_the_bad_values_of_a_record(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", [{"a": 1, "b": "x"}, {"a": "one", "b": "y"}])
    provided = pa.schema([("a", pa.int64()), ("b", pa.string())])
    table = scan(tmp_path, provided_schema=provided, on_error="null")
    assert rows(table) == [{"a": 1, "b": "x"}, {"a": None, "b": "y"}]


def test_csv_with_header_and_types(tmp_path: Path) -> None:
    write_text(tmp_path / "a.csv", 'ID,Name,score\n1,"Smith, J",2.5\n2,,\n')
    provided = pa.schema([("id", pa.int32()), ("score", pa.float64())])
    table = scan(tmp_path, "csv", options={"header": "true"}, provided_schema=provided)
    assert types(table) == {"id": "int32", "score": "double", "Name": "string"}
    assert rows(table) == [
        {"id": 1, "score": 2.5, "Name": "Smith, J"},
        {"id": 2, "score": None, "Name": ""},
    ]


def test_csv_values_that_do_not_parse_are_bad_records_with_their_line(tmp_path: Path) -> None:
    write_text(tmp_path / "a.csv", "n,s\n1,a\n2,b\nthree,c\n4,d\n")
    provided = pa.schema([("n", pa.int64())])
    options = {"header": "true"}
    with pytest.raises(
        BadRecord, match=r"line 4: column 'n': expected a int64 value, got the string 'three'"
    ):
        scan(tmp_path, "csv", options=options, provided_schema=provided)
    table = scan(tmp_path, "csv", options=options, provided_schema=provided, on_error="skip")
    assert rows(table) == [{"n": 1, "s": "a"}, {"n": 2, "s": "b"}, {"n": 4, "s": "d"}]


def test_headerless_csv_is_drills_columns_list(tmp_path: Path) -> None:
    write_text(tmp_path / "a.csv", 'a,b,c\n"d,e",f,g\n')
    table = scan(tmp_path, "csv")
    assert types(table) == {"columns": "list<element: string>"}
    assert table.column("columns").to_pylist() == [["a", "b", "c"], ["d,e", "f", "g"]]
    picked = scan(tmp_path, "csv", columns=["columns[2]", "columns[0]", "columns[7]"])
    assert rows(picked) == [
        {"columns[2]": "c", "columns[0]": "a", "columns[7]": None},
        {"columns[2]": "g", "columns[0]": "d,e", "columns[7]": None},
    ]


def test_ragged_headerless_lines_are_malformed_records(tmp_path: Path) -> None:
    """A headerless csv/tsv record as wide as the first one, as in Spark's csv reader; ``null``
    keeps the fields a record has, the missing ones null, the extra ones dropped."""
    write_text(tmp_path / "a.tsv", "a\tb\tc\nd\ne\tf\tg\th\n")
    with pytest.raises(BadRecord, match="line 2: the record has 1 fields where the file has 3"):
        scan(tmp_path, "tsv", columns=["columns", "columns[1]"])
    skipped = scan(tmp_path, "tsv", columns=["columns", "columns[1]"], on_error="skip")
    assert rows(skipped) == [{"columns": ["a", "b", "c"], "columns[1]": "b"}]
    nulled = scan(tmp_path, "tsv", columns=["columns", "columns[1]"], on_error="null")
    assert rows(nulled) == [
        {"columns": ["a", "b", "c"], "columns[1]": "b"},
        {"columns": ["d", None, None], "columns[1]": None},
        {"columns": ["e", "f", "g"], "columns[1]": "f"},
    ]
    assert scan(tmp_path, "text").num_rows == 3


def test_headerless_csv_with_a_provided_schema_names_fields_by_position(tmp_path: Path) -> None:
    write_text(tmp_path / "a.csv", "1;x\n2;y\n")
    provided = pa.schema([("n", pa.int64()), ("s", pa.string())])
    table = scan(tmp_path, "csv", provided_schema=provided, options={"delimiter": ";"})
    assert rows(table) == [{"n": 1, "s": "x"}, {"n": 2, "s": "y"}]


def test_text_lines_are_records_split_on_an_optional_delimiter(tmp_path: Path) -> None:
    write_text(tmp_path / "a.txt", "one|1\r\n\ntwo|2|x\nlast")
    assert scan(tmp_path, "text").column("columns").to_pylist() == [
        ["one|1"],
        [""],
        ["two|2|x"],
        ["last"],
    ]
    split = scan(tmp_path, "text", columns=["columns[1]"], options={"delimiter": "|"})
    assert split.column("columns[1]").to_pylist() == ["1", None, "2", None]


def test_text_that_is_not_utf8_is_a_bad_record(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"fine\n\xff\xfe\nalso fine\n")
    with pytest.raises(BadRecord, match="line 2: the line is not UTF-8"):
        scan(tmp_path, "text")
    nulled = scan(tmp_path, "text", on_error="null")
    assert nulled.column("columns").to_pylist() == [["fine"], None, ["also fine"]]


def test_nested_members_and_list_elements(tmp_path: Path) -> None:
    write_json(
        tmp_path / "a.json",
        [
            {"m": {"a": 1, "b": {"c": "deep"}}, "l": [10, 20]},
            {"m": {"a": 2}, "l": [30]},
            {"m": None, "l": None},
        ],
    )
    table = scan(tmp_path, columns=["M.A", "m.b.c", "m.zz", "l[1]", "L[0]"])
    assert table.schema.names == ["M.A", "m.b.c", "m.zz", "l[1]", "L[0]"]
    assert types(table)["M.A"] == "int64"
    assert rows(table) == [
        {"M.A": 1, "m.b.c": "deep", "m.zz": None, "l[1]": 20, "L[0]": 10},
        {"M.A": 2, "m.b.c": None, "m.zz": None, "l[1]": None, "L[0]": 30},
        {"M.A": None, "m.b.c": None, "m.zz": None, "l[1]": None, "L[0]": None},
    ]


def test_batches_respect_max_rows_and_max_bytes(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", [{"n": i, "s": "v" * (i % 50)} for i in range(500)])
    by_rows = list(ScanReader(plan_scan(ScanSpec([str(tmp_path)], "json", max_rows=64))).read())
    assert [batch.num_rows for batch in by_rows] == [64] * 7 + [52]
    spec = ScanSpec([str(tmp_path)], "json", max_bytes=2048)
    by_bytes = list(ScanReader(plan_scan(spec)).read())
    assert len(by_bytes) > 5
    assert all(batch.nbytes <= 2048 for batch in by_bytes)
    assert sum(batch.num_rows for batch in by_bytes) == 500


def test_a_row_over_max_bytes_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = write_json(tmp_path / "a.json", [{"s": "x"}, {"s": "x" * 5000}])
    with pytest.raises(RowTooLarge, match=f"file {path}, row 2: .* raise max_bytes"):
        scan(tmp_path, max_bytes=1000)


@pytest.fixture
def no_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if any reader decodes values."""
    for format_class in FORMAT_CLASSES.values():
        monkeypatch.setattr(format_class, "native_batches", refuse)
    monkeypatch.setattr(scanner, "row_batches", refuse)


@pytest.mark.usefixtures("no_decoding")
def test_an_empty_projection_counts_without_decoding(tmp_path: Path) -> None:
    write_text(tmp_path / "j" / "a.json", '{"a": 1}\n  \n{"a": 2}\n\n{"a": 3}')
    write_text(tmp_path / "c" / "a.csv", 'h\n"multi\nline"\nplain\n')
    write_text(tmp_path / "t" / "a.txt", "x\n\ny\n")
    write_parquet(tmp_path / "p" / "a.parquet", pa.table({"n": list(range(1000))}))
    assert scan(tmp_path / "j", columns=[], on_error="null").num_rows == 3
    csv_options = {"header": "true", "multiline": "true"}
    assert scan(tmp_path / "c", "csv", columns=[], options=csv_options).num_rows == 2
    assert scan(tmp_path / "t", "text", columns=[]).num_rows == 3
    parquet = scan(tmp_path / "p", "parquet", columns=[], max_rows=300)
    assert parquet.num_rows == 1000
    assert parquet.num_columns == 0


def test_parquet_values_that_do_not_cast_follow_on_error(tmp_path: Path) -> None:
    path = write_parquet(
        tmp_path / "a.parquet", pa.table({"n": ["1", "x", "3"], "s": ["a", "b", "c"]})
    )
    provided = pa.schema([("n", pa.int64())])
    with pytest.raises(BadRecord, match=f"file {path}, row 2: column 'n'"):
        scan(tmp_path, "parquet", provided_schema=provided)
    nulled = scan(tmp_path, "parquet", provided_schema=provided, on_error="null")
    assert rows(nulled) == [{"n": 1, "s": "a"}, {"n": None, "s": "b"}, {"n": 3, "s": "c"}]
    skipped = scan(tmp_path, "parquet", provided_schema=provided, on_error="skip")
    assert rows(skipped) == [{"n": 1, "s": "a"}, {"n": 3, "s": "c"}]


def test_a_target_schema_casts_batches_once_to_other_types(tmp_path: Path) -> None:
    write_parquet(
        tmp_path / "a.parquet",
        pa.table({"u": pa.array([1], pa.uint32()), "t": pa.array([1_000_000], pa.timestamp("ns"))}),
    )
    plan = plan_scan(ScanSpec([str(tmp_path)], "parquet", columns=["u", "t", "filename"]))
    target = pa.schema([("u", pa.int64()), ("t", pa.timestamp("us")), ("filename", pa.string())])
    (batch,) = ScanReader(plan, target).read()
    assert batch.schema == target
    assert batch.to_pylist() == [
        {"u": 1, "t": batch.column("t")[0].as_py(), "filename": "a.parquet"}
    ]


def test_repeated_plans_reuse_the_resolved_schema_until_a_file_changes(tmp_path: Path) -> None:
    clear_schema_cache()
    path = write_json(tmp_path / "a.json", [{"a": 1}])
    spec = ScanSpec([str(tmp_path)], "json")
    assert not plan_scan(spec).from_cache
    again = plan_scan(ScanSpec([str(tmp_path)], "json", columns=["a"], max_rows=10))
    assert again.from_cache
    write_json(path, [{"a": 1, "b": 2}])
    changed = plan_scan(spec)
    assert not changed.from_cache
    assert changed.schema.names == ["a", "b"]


def test_sampling_reads_only_the_start_of_a_file(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [{"a": i} for i in range(200)]
    records.append({"a": 1, "late": "x"})
    write_json(tmp_path / "a.json", records)
    plan = plan_scan(ScanSpec([str(tmp_path)], "json", sample_bytes=100))
    assert plan.schema.names == ["a"]


def test_a_json_field_only_null_in_the_sample_is_text_of_each_later_value(tmp_path: Path) -> None:
    """Spark's reader makes such a field a string; a value past the sample is its json text."""
    records: list[dict[str, Any]] = [{"id": i, "v": None} for i in range(50)]
    records += [{"id": 50, "v": 7}, {"id": 51, "v": {"x": 1}}, {"id": 52, "v": "s"}]
    write_json(tmp_path / "a.json", records)
    table = scan(tmp_path, "json", sample_bytes=100)
    assert types(table)["v"] == "string"
    assert table.column("v").to_pylist()[-4:] == [None, "7", '{"x":1}', "s"]


@pytest.mark.usefixtures("columnar_only")
def test_csv_timestamps_without_an_offset_are_utc_in_a_zoned_column(tmp_path: Path) -> None:
    write_text(tmp_path / "a.csv", "t\n2024-01-02T03:04:05\n2024-01-02 03:04:05\n")
    provided = pa.schema([("t", pa.timestamp("us", tz="UTC"))])
    table = scan(tmp_path, "csv", options={"header": "true"}, provided_schema=provided)
    stamps = [value.isoformat() for value in table.column("t").to_pylist()]
    assert stamps == ["2024-01-02T03:04:05+00:00"] * 2


def test_timestamps_with_and_without_offsets_mix_through_the_row_path(tmp_path: Path) -> None:
    write_text(tmp_path / "a.csv", "t\n2024-01-02T03:04:05\n2024-01-02T05:04:05+02:00\n")
    provided = pa.schema([("t", pa.timestamp("us", tz="UTC"))])
    table = scan(tmp_path, "csv", options={"header": "true"}, provided_schema=provided)
    stamps = [value.isoformat() for value in table.column("t").to_pylist()]
    assert stamps == ["2024-01-02T03:04:05+00:00"] * 2


@given(
    lengths=st.lists(st.integers(min_value=0, max_value=300), min_size=1, max_size=200),
    max_rows=st.integers(min_value=1, max_value=64),
    max_bytes=st.integers(min_value=400, max_value=5000),
)
def test_limited_batches_keep_every_row_within_both_limits(
    lengths: list[int], max_rows: int, max_bytes: int
) -> None:
    batch = pa.record_batch(
        {"n": list(range(len(lengths))), "s": ["x" * length for length in lengths]}
    )
    pieces = list(limit_batches(batch, max_rows, max_bytes, "file f"))
    assert all(0 < piece.num_rows <= max_rows for piece in pieces)
    assert all(piece.nbytes <= max_bytes for piece in pieces)
    assert pa.Table.from_batches(pieces).to_pylist() == batch.to_pylist()


class Rejected:
    """A reject sink that keeps what it is given."""

    def __init__(self) -> None:
        self.rejects: list[Reject] = []

    def write(self, reject: Reject) -> None:
        self.rejects.append(reject)


@pytest.mark.parametrize("policy", ["skip", "null"])
def test_records_skipped_or_nulled_go_to_the_reject_sink(tmp_path: Path, policy: str) -> None:
    path = write_text(tmp_path / "a.json", '{"a": 1}\n{"a": \n{"a": "two"}\n')
    spec = ScanSpec([str(tmp_path)], "json", provided_schema=pa.schema([("a", pa.int64())]),
                    on_error=policy)  # fmt: skip
    sink = Rejected()
    reader = ScanReader(plan_scan(spec), rejects=sink)
    read(spec, reader)
    assert [(r.file, r.line, r.record) for r in sink.rejects] == [
        (str(path), 2, '{"a": '),
        (str(path), 3, '{"a": "two"}'),
    ]
    assert "malformed json" in sink.rejects[0].reason
    assert "column 'a'" in sink.rejects[1].reason


def test_null_value_holds_on_the_row_path_too(tmp_path: Path) -> None:
    """A ragged record sends the file to the row path, which reads ``nullValue`` as the
    columnar reader does."""
    options = {"header": "true", "nullValue": ""}
    write_text(tmp_path / "ragged" / "a.csv", "id,qty\n1000\n0,\n1,7\n")
    write_text(tmp_path / "even" / "a.csv", "id,qty\n0,\n1,7\n")
    ragged = scan(tmp_path / "ragged", "csv", options=options, on_error="null")
    even = scan(tmp_path / "even", "csv", options=options)
    assert rows(ragged)[1:] == rows(even) == [{"id": "0", "qty": None}, {"id": "1", "qty": "7"}]
    assert rows(ragged)[0] == {"id": "1000", "qty": None}
