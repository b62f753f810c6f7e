"""The format registry: the one place a format's name becomes its class."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from connect_plugin import proto
from connect_plugin.errors import InvalidScanSpec
from connect_plugin.scanning import Format, ScanOptions, ScanReader, ScanSpec, plan_scan
from connect_plugin.scanning.formats import (
    ALIASES,
    FORMAT_CLASSES,
    FileFormat,
    ensure_format,
    format_of,
)
from connect_plugin.scanning.formats.delimited import CsvFormat
from connect_plugin.scanning.formats.json import JsonFormat


def test_the_enum_has_one_member_per_registered_class_in_registry_order() -> None:
    """Aliases (a class under a second name) add no member."""
    own_names = [cls.name for cls in dict.fromkeys(FORMAT_CLASSES.values())]
    assert [member.value for member in Format] == own_names
    assert Format.words() == "json, csv, tsv, parquet, text"
    assert Format.either() == "json, csv, tsv, parquet or text"
    for cls in FORMAT_CLASSES.values():
        assert FORMAT_CLASSES[cls.name] is cls


@pytest.mark.parametrize("value", ["csv", " CSV ", Format.CSV, CsvFormat])
def test_a_name_member_or_class_gives_the_class(value: object) -> None:
    assert ensure_format(value) is CsvFormat
    assert format_of(value) is Format.CSV


def test_a_format_object_gives_its_class() -> None:
    spec = ScanSpec(["/d"], CsvFormat)
    assert spec.format is Format.CSV
    assert isinstance(spec.file_format, FileFormat)
    assert ensure_format(spec.file_format) is CsvFormat


@pytest.mark.parametrize("value", ["xml", "", None, 3, FileFormat, str])
def test_anything_else_is_an_error_naming_the_option_and_every_format(value: object) -> None:
    with pytest.raises(InvalidScanSpec, match="option 'format' must be one of json, csv, tsv"):
        ensure_format(value, "option 'format'")


def test_ndjson_is_an_alias_of_json_and_no_format_of_its_own() -> None:
    assert ALIASES == {"ndjson": Format.JSON}
    assert ensure_format("NDJSON") is JsonFormat
    assert ScanSpec(["/d"], "ndjson").format is Format.JSON
    assert "ndjson" not in Format.words()
    assert ScanOptions.parse({"path": "/d", "format": "ndjson"}).format is Format.JSON
    message = proto.Scan(wildcard=True)
    message.files.paths.append("/d")
    message.files.format = "ndjson"
    assert ScanOptions.from_message(message).to_spec().format is Format.JSON


def test_ndjson_files_read_as_json_files(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"id": 1, "m": {"a": "x"}}\n{"id": 2.5}\n')
    tables = [
        pa.Table.from_batches(list(ScanReader(plan_scan(ScanSpec([str(tmp_path)], name))).read()))
        for name in ("json", "ndjson")
    ]
    assert tables[0].num_rows == 2
    assert tables[0].equals(tables[1])
