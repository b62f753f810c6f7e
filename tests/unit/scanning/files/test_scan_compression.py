"""Compressed json, csv, tsv and text: by extension or by ``compression=``, sampled by their head."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from connect_plugin.errors import InvalidScanSpec, ScanError
from connect_plugin.scanning import ScanSpec, clear_schema_cache, plan_scan
from tests.unit.scanning.scan_checks import read, rows, scan, types

CODECS = {"gz": "gzip", "bz2": "bz2", "zst": "zstd"}


def write_compressed(path: Path, data: bytes, codec: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with pa.output_stream(str(path), compression=codec) as out:
        out.write(data)
    return path


JSON = b'{"id": 1, "name": "a"}\n\n{"id": 2, "name": "b", "score": 2.5}\n'
CSV = b"id,name\n1,a\n2,\"b,c\"\n"


@pytest.mark.parametrize("ending", list(CODECS))
def test_each_codec_is_read_by_its_extension(tmp_path: Path, ending: str) -> None:
    codec = CODECS[ending]
    write_compressed(tmp_path / "j" / f"a.json.{ending}", JSON, codec)
    write_compressed(tmp_path / "c" / f"a.csv.{ending}", CSV, codec)
    write_compressed(tmp_path / "t" / f"a.tsv.{ending}", CSV.replace(b",", b"\t"), codec)
    write_compressed(tmp_path / "x" / f"a.txt.{ending}", b"one\ntwo\n", codec)
    table = scan(tmp_path / "j")
    assert types(table) == {"id": "int64", "name": "string", "score": "double"}
    assert rows(table) == [
        {"id": 1, "name": "a", "score": None},
        {"id": 2, "name": "b", "score": 2.5},
    ]
    header = {"header": "true"}
    assert rows(scan(tmp_path / "c", "csv", options=header)) == [
        {"id": "1", "name": "a"},
        {"id": "2", "name": "b,c"},
    ]
    tsv = scan(tmp_path / "t", "tsv", options={"header": "true", "quote": ""}, on_error="null")
    assert rows(tsv) == [{"id": "1", "name": "a"}, {"id": "2", "name": '"b'}]
    assert rows(scan(tmp_path / "x", "text")) == [{"columns": ["one"]}, {"columns": ["two"]}]


@pytest.mark.parametrize("file_format", ["json", "csv", "text"])
def test_counts_decompress_but_decode_nothing(tmp_path: Path, file_format: str) -> None:
    data = {"json": JSON, "csv": CSV, "text": b"one\ntwo\nthree"}[file_format]
    write_compressed(tmp_path / f"a.{file_format}.gz", data, "gzip")
    options = {"header": "true"} if file_format == "csv" else {}
    counted = scan(tmp_path, file_format, columns=[], options=options)
    assert counted.num_rows == {"json": 2, "csv": 2, "text": 3}[file_format]


def test_compression_option_reads_files_whatever_their_names(tmp_path: Path) -> None:
    write_compressed(tmp_path / "z" / "events.log", JSON, "zstd")
    assert scan(tmp_path / "z", compression="zstd").num_rows == 2
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "plain.json.gz").write_bytes(JSON)
    assert scan(tmp_path / "p", compression="none").num_rows == 2
    with pytest.raises(ScanError, match=r"plain\.json\.gz"):
        scan(tmp_path / "p")


def test_planning_reads_only_the_head_of_the_decompressed_stream(tmp_path: Path) -> None:
    """The file's compressed tail is cut off: planning never gets there, reading does."""
    lines = b"".join(b'{"id": %d, "text": "%s"}\n' % (n, b"x" * 50) for n in range(50_000))
    path = write_compressed(tmp_path / "big.json.gz", lines, "gzip")
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    clear_schema_cache()
    spec = ScanSpec([str(tmp_path)], "json", sample_bytes=4096)
    plan = plan_scan(spec)
    assert [f.name for f in plan.table.fields] == ["id", "text"]
    with pytest.raises((ScanError, OSError, pa.ArrowInvalid)):
        read(spec)


def test_the_row_path_reads_compressed_files_too(tmp_path: Path) -> None:
    records = b'{"a": 1}\n{"a": "two"}\n{"a": 3}\n'
    write_compressed(tmp_path / "a.json.bz2", records, "bz2")
    table = scan(tmp_path, provided_schema=pa.schema([("a", pa.string())]))
    assert rows(table) == [{"a": "1"}, {"a": "two"}, {"a": "3"}]


def test_parquet_takes_no_whole_file_compression() -> None:
    with pytest.raises(InvalidScanSpec, match="compression='gzip' does not apply to parquet"):
        ScanSpec(["/d"], "parquet", compression="gzip")
    with pytest.raises(InvalidScanSpec, match="compression must be one of auto, none"):
        ScanSpec(["/d"], "json", compression="lzma")
