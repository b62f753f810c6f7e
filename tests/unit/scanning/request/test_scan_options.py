"""Text options (as a SQL OPTIONS clause gives them) to typed scan choices, errors naming the option."""

from __future__ import annotations

import pyarrow as pa
import pytest

from connect_plugin.errors import InvalidScanSpec
from connect_plugin.scanning import Compression, Evolution, Format, OnError, Partitioning
from connect_plugin.scanning.request.options import ScanOptions, choice


def test_a_full_set_of_options_becomes_typed_values() -> None:
    parsed = ScanOptions.parse(
        {
            "PATH": "/data/*.csv",
            "format": "CSV",
            "columns": "a, b , dir0, columns[1]",
            "schema": "a BIGINT",
            "on_error": "skip",
            "evolution": "rescue",
            "rescued_column": "_r",
            "partitioning": "hive",
            "compression": "gz",
            "max_rows": "100",
            "header": "true",
            "delimiter": ";",
        }
    )
    assert parsed.paths == ("/data/*.csv",)
    assert parsed.format is Format.CSV
    assert parsed.columns == ("a", "b", "dir0", "columns[1]")
    assert parsed.schema == "a BIGINT"
    assert parsed.on_error is OnError.SKIP
    assert parsed.evolution is Evolution.RESCUE
    assert parsed.partitioning is Partitioning.HIVE
    assert parsed.compression is Compression.GZIP
    assert parsed.max_rows == 100
    assert dict(parsed.reader) == {"header": "true", "delimiter": ";"}


def test_defaults_and_the_wildcard() -> None:
    parsed = ScanOptions.parse({"path": "/d", "format": "json", "columns": "*"})
    assert parsed.columns is None
    assert (parsed.on_error, parsed.evolution, parsed.strict) == (OnError.FAIL, None, False)
    assert ScanOptions.parse({"paths": "/a, /b", "format": "json"}).paths == ("/a", "/b")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"format": "json"}, "option 'path' is missing"),
        ({"path": "/d"}, "option 'format' is missing"),
        ({"path": "/d", "format": "xml"}, "option 'format' must be one of json, csv"),
        ({"path": "/d", "format": "json", "on_error": "maybe"}, "option 'on_error' must be one of"),
        ({"path": "/d", "format": "json", "strict": "yes"}, "option 'strict' must be true or false"),
        ({"path": "/d", "format": "json", "max_rows": "many"}, "option 'max_rows' must be a whole"),
        ({"path": "/d", "format": "json", "columns": "a,,b"}, "option 'columns' has an empty name"),
        ({"path": "/d", "paths": "/e", "format": "json"}, "not 'path' and 'paths'"),
        ({"table": "t", "path": "/e"}, "not 'path' and 'table'"),
        ({"table": "t", "format": "csv"}, "option 'format' does not go with option 'table'"),
        ({"path": "/d", "format": "json", "header": "true"}, "option 'header' is not an option"),
        ({"path": "/d", "PATH": "/e", "format": "json"}, "option 'PATH' is given twice"),
    ],
)
def test_each_bad_option_is_named(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidScanSpec, match=message):
        ScanOptions.parse(options)


def test_choice_takes_members_words_and_aliases() -> None:
    assert choice("x", OnError.NULL, OnError) is OnError.NULL
    assert choice("x", " NULL ", OnError) is OnError.NULL
    assert choice("x", "zst", Compression) is Compression.ZSTD
    assert choice("x", "addNewColumns", Evolution) is Evolution.ADD_NEW_COLUMNS
    assert f"{OnError.SKIP}" == "skip"
    with pytest.raises(InvalidScanSpec, match="x must be one of fail, skip, null, reject; got 3"):
        choice("x", 3, OnError)


def test_options_become_a_spec_whose_reader_options_the_format_checks() -> None:
    parsed = ScanOptions.parse(
        {"path": "/d", "format": "csv", "header": "TRUE", "strict": "true", "max_rows": "10"}
    )
    spec = parsed.to_spec(pa.schema([("a", pa.int64())]))
    assert spec.has_header
    assert spec.strict
    assert spec.evolution is Evolution.NONE
    assert spec.max_rows == 10
    assert spec.provided_schema == pa.schema([("a", pa.int64())])
    with pytest.raises(InvalidScanSpec, match="option 'multiline' must be true or false"):
        ScanOptions.parse({"path": "/d", "format": "csv", "multiLine": "often"}).to_spec()


def test_an_unknown_option_is_named_with_every_known_one() -> None:
    with pytest.raises(InvalidScanSpec) as caught:
        ScanOptions.parse({"path": "/d", "format": "json", "nope": "1"})
    message = str(caught.value)
    assert "option 'nope' is not an option of a scan of json files" in message
    for known in ("path", "columns", "on_error", "json_format", "s3.endpoint"):
        assert known in message


def test_pairs_keep_a_repeated_option_to_refuse_it() -> None:
    with pytest.raises(InvalidScanSpec, match="option 'Format' is given twice"):
        ScanOptions.parse([("path", "/d"), ("format", "json"), ("Format", "csv")])


def test_a_table_scan_takes_the_tables_files_format_and_reader_options() -> None:
    parsed = ScanOptions.parse({"table": "t", "columns": "a", "delimiter": "|"})
    assert (parsed.table, parsed.paths, parsed.format) == ("t", (), None)
    with pytest.raises(InvalidScanSpec, match="table \\[t\\] needs the table's files"):
        parsed.to_spec()
    spec = parsed.for_table("/w/t", Format.CSV, {"header": "true", "delimiter": ";"}).to_spec()
    assert (tuple(spec.paths), spec.format, spec.partitioning) == (
        ("/w/t",),
        Format.CSV,
        Partitioning.HIVE,
    )
    assert dict(spec.options) == {"header": "true", "delimiter": "|"}
