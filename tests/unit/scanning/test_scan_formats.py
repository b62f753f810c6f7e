"""The format registry: the one place a format's name becomes its class."""

from __future__ import annotations

import pytest

from connect_plugin.errors import InvalidScanSpec
from connect_plugin.scanning import Format, ScanSpec
from connect_plugin.scanning.formats import (
    FORMAT_CLASSES,
    FileFormat,
    ensure_format,
    format_of,
)
from connect_plugin.scanning.formats.delimited import CsvFormat


def test_the_enum_has_one_member_per_registered_class_in_registry_order() -> None:
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
