"""The name rule (``connect_plugin.scanning.names``, docs/scans.md "Names") on every path:
requested, schema and file names in any case, keys that fold together, names shared with
implicit columns, byte order marks."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from connect_plugin.errors import BadRecord, UnreadableFile
from connect_plugin.scanning import ScanReader, ScanSpec, plan_scan
from connect_plugin.scanning.formats.json import JsonFormat
from connect_plugin.scanning.formats.json_keys import JsonKeys
from connect_plugin.scanning.planning.implicit import IMPLICIT_MARKER
from connect_plugin.scanning.reading import scanner
from tests.unit.scanning.scan_checks import rows, scan, write_json, write_parquet, write_text


def rescued(table: pa.Table, column: str = "_rescued") -> list[dict[str, object] | None]:
    values = []
    for text in table.column(column).to_pylist():
        found = None if text is None else json.loads(text)
        if found is not None:
            found.pop("_file_path")
        values.append(found)
    return values


def test_a_schema_and_columns_name_a_key_in_another_case(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", [{"id": 1, "ms": 2.5}])
    write_text(tmp_path / "b.csv", "Id,MS\n2,3.5\n")
    schema = pa.schema([("ID", pa.int64()), ("ms", pa.float64())])
    assert rows(scan(tmp_path / "a.json", columns=["ID", "ms"], provided_schema=schema)) == [
        {"ID": 1, "ms": 2.5}
    ]
    table = scan(
        tmp_path / "b.csv", "csv", columns=["ID", "ms"], provided_schema=schema,
        options={"header": "true"},
    )  # fmt: skip
    assert rows(table) == [{"ID": 2, "ms": 3.5}]


def test_keys_of_one_file_in_two_cases_are_one_column(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", [{"id": 1, "A": 8}, {"id": 2, "a": 7}, {"ID": 3, "a": None}])
    assert rows(scan(tmp_path)) == [{"id": 1, "A": 8}, {"id": 2, "A": 7}, {"id": 3, "A": None}]


def test_a_spelling_first_seen_past_the_first_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(JsonFormat, "block_bytes", 64)
    monkeypatch.setattr(scanner, "row_batches", refuse)
    records = [{"id": i, "v": i} for i in range(20)] + [{"ID": 20, "V": 20}]
    write_json(tmp_path / "a.json", records)
    table = scan(tmp_path, sample_bytes=32)
    assert table.column("id").to_pylist() == list(range(21))
    assert table.column("v").to_pylist() == list(range(21))


def refuse(*_: object) -> None:
    raise AssertionError("this path must not be taken")


FOLDING_TO_ASCII = [
    chr(point) for point in range(0x80, sys.maxunicode + 1) if chr(point).casefold().isascii()
]
"""Every character outside ASCII that case folding turns into ASCII (the sharp s, the
Kelvin sign, the long s, ligatures), from Python's Unicode tables."""


@pytest.mark.parametrize(
    "key",
    [
        "\\u0049D",
        *(f"{c}tate" for c in FOLDING_TO_ASCII),
        *(f"\\u{ord(c):04x}tate" for c in FOLDING_TO_ASCII),
    ],
)
def test_keys_that_only_unicode_folding_matches(tmp_path: Path, key: str) -> None:
    column = json.loads(f'"{key}"').casefold()
    lines = [json.dumps({"n": 1, column: 1}), f'{{"n": 2, "{key}": 2}}']
    write_text(tmp_path / "a.json", "\n".join(lines) + "\n")
    assert scan(tmp_path, sample_bytes=16).column(column).to_pylist() == [1, 2]


def test_a_spelling_with_a_kelvin_sign_then_one_in_another_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spelling learned with a character outside ASCII (longer in bytes than the name)
    beside tokens of the name's length in later blocks (a find of the 20-minute run)."""
    monkeypatch.setattr(JsonFormat, "block_bytes", 64)
    lines = [f'{{"id": {i}, "ok": {i}}}' for i in range(12)]
    lines[6] = '{"id": 6, "o\\u212a": 6}'
    lines.append('{"id": 12, "Ok": 12}')
    write_text(tmp_path / "a.json", "\n".join(lines) + "\n")
    table = scan(tmp_path, sample_bytes=16)
    assert table.column("ok").to_pylist() == list(range(13))


def test_blocks_with_capitals_of_no_letter_of_a_name_are_not_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(JsonFormat, "block_bytes", 64)
    monkeypatch.setattr(JsonKeys, "_upper_case_tokens_hide", refuse)
    write_json(tmp_path / "a.json", [{"id": i, "v": "XYZ BOW"} for i in range(20)])
    table = scan(tmp_path, sample_bytes=32)
    assert table.column("v").to_pylist() == ["XYZ BOW"] * 20


def test_two_keys_of_one_record_under_each_policy(tmp_path: Path) -> None:
    path = write_json(tmp_path / "a.json", [{"id": 1, "A": 5, "a": 6}, {"id": 2, "a": 3, "A": None}])
    with pytest.raises(BadRecord, match=f"file {path}, line 1: keys 'A' and 'a' differ only in case"):
        scan(tmp_path)
    assert rows(scan(tmp_path, on_error="skip")) == [{"id": 2, "A": 3}]
    assert rows(scan(tmp_path, on_error="null")) == [{"id": 1, "A": None}, {"id": 2, "A": 3}]
    kept = scan(tmp_path, rescued_column="_rescued")
    assert kept.column("A").to_pylist() == [5, 3]
    assert rescued(kept) == [{"a": 6}, None]


def test_a_csv_header_with_two_spellings_or_one_name_twice(tmp_path: Path) -> None:
    write_text(tmp_path / "a" / "a.csv", "id,A,a\n1,5,\n2,,6\n3,7,8\n")
    options = {"header": "true", "nullValue": ""}
    assert rows(scan(tmp_path / "a", "csv", options=options, on_error="skip")) == [
        {"id": "1", "A": "5"},
        {"id": "2", "A": "6"},
    ]
    kept = scan(tmp_path / "a", "csv", options=options, rescued_column="_rescued")
    assert kept.column("A").to_pylist() == ["5", "6", "7"]
    assert rescued(kept) == [None, None, {"a": "8"}]
    write_text(tmp_path / "b" / "a.csv", "\nid,v,v\n1,5,\n2,,6\n3,7,8\n")
    assert rows(scan(tmp_path / "b", "csv", options=options, on_error="null")) == [
        {"id": "1", "v": "5"},
        {"id": "2", "v": "6"},
        {"id": "3", "v": None},
    ]


def test_parquet_columns_in_two_cases(tmp_path: Path) -> None:
    write_parquet(tmp_path / "a.parquet", pa.table({"A": [1, None, 3], "a": [None, 2, 4]}))
    plan = plan_scan(ScanSpec([str(tmp_path)], "parquet"))
    assert plan.schema.names == ["A"]
    with pytest.raises(BadRecord, match="row 3: column 'A': keys 'A' and 'a' differ only in case"):
        ScanReader(plan).count_file(plan.files[0])
    with pytest.raises(BadRecord, match="row 3: column 'A': keys 'A' and 'a' differ only in case"):
        scan(tmp_path, "parquet")
    skipping = plan_scan(ScanSpec([str(tmp_path)], "parquet", on_error="skip"))
    assert ScanReader(skipping).count_file(skipping.files[0]) == 2
    assert rows(scan(tmp_path, "parquet", on_error="null")) == [{"A": 1}, {"A": 2}, {"A": None}]
    kept = scan(tmp_path, "parquet", rescued_column="_rescued")
    assert kept.column("A").to_pylist() == [1, 2, 3]
    assert rescued(kept) == [None, None, {"a": 4}]


def test_struct_members_in_two_cases(tmp_path: Path) -> None:
    write_json(tmp_path / "j" / "a.json", [{"m": {"a": 1}}, {"m": {"A": 2}}])
    write_json(tmp_path / "j" / "b.json", [{"m": {"A": 3, "b": 1}}])
    assert scan(tmp_path / "j").column("m").to_pylist() == [
        {"a": 1, "b": None},
        {"a": 2, "b": None},
        {"a": 3, "b": 1},
    ]
    assert scan(tmp_path / "j", columns=["m.A"]).column("m.A").to_pylist() == [1, 2, 3]
    write_parquet(tmp_path / "p" / "a.parquet", pa.table({"m": [{"a": 1}]}))
    write_parquet(tmp_path / "p" / "b.parquet", pa.table({"m": [{"A": 2}]}))
    assert scan(tmp_path / "p", "parquet").column("m").to_pylist() == [{"a": 1}, {"a": 2}]
    path = write_json(tmp_path / "t" / "a.json", [{"m": {"a": 1, "A": 2}}])
    with pytest.raises(BadRecord, match=f"file {path}, line 1: column 'm': expected an object"):
        scan(tmp_path / "t")
    assert scan(tmp_path / "t", on_error="null").column("m").to_pylist() == [None]


def test_a_column_of_the_data_wins_over_an_implicit_column(tmp_path: Path) -> None:
    write_json(tmp_path / "d" / "a.json", [{"id": 1, "filename": "mine", "DIR0": "own"}])
    whole = scan(tmp_path)
    assert rows(whole) == [{"id": 1, "filename": "mine", "DIR0": "own"}]
    listed = scan(tmp_path, columns=["id", "FileName", "dir0", "dir1", "suffix"])
    assert rows(listed) == [
        {"id": 1, "FileName": "mine", "dir0": "own", "dir1": None, "suffix": "json"}
    ]
    marked = pa.field("folder", pa.string(), metadata={IMPLICIT_MARKER: b"dir0"})
    schema = pa.schema([pa.field("dir0", pa.string()), marked])
    assert rows(scan(tmp_path, provided_schema=schema, columns=["dir0", "folder"])) == [
        {"dir0": "own", "folder": "d"}
    ]


def test_a_schema_column_named_like_an_implicit_column_is_data(tmp_path: Path) -> None:
    write_parquet(tmp_path / "a.parquet", pa.table({"id": [1], "dir0": ["x"], "filename": ["y"]}))
    schema = pa.schema([("id", pa.int64()), ("dir0", pa.string()), ("filename", pa.string())])
    for columns in (None, ["id", "dir0", "filename"]):
        table = scan(tmp_path, "parquet", provided_schema=schema, columns=columns)
        assert rows(table) == [{"id": 1, "dir0": "x", "filename": "y"}]


@pytest.mark.parametrize("file_format", ["json", "csv", "tsv", "text"])
def test_a_utf8_byte_order_mark_is_no_part_of_the_text(tmp_path: Path, file_format: str) -> None:
    text = {
        "json": '{"id": 1}\n',
        "csv": "id,v\n1,2\n",
        "tsv": "id\tv\n1\t2\n",
        "text": "id\n",
    }[file_format]
    (tmp_path / f"a.{file_format}").write_bytes(b"\xef\xbb\xbf" + text.encode())
    options = {"header": "true"} if file_format in ("csv", "tsv") else {}
    table = scan(tmp_path, file_format, options=options)
    first = table.schema.names[0]
    assert first in ("id", "columns")
    if first == "columns":
        assert table.column("columns").to_pylist() == [["id"]]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_other_byte_order_marks_are_unreadable_files(tmp_path: Path, encoding: str) -> None:
    text = "\ufeff" + '{"id": 1}\n'
    path = tmp_path / "a.json"
    path.write_bytes(text.encode("utf-32-le" if encoding == "utf-32" else encoding))
    with pytest.raises(UnreadableFile, match=f"file {path} is UTF-.* text"):
        scan(tmp_path, on_error="skip")
