"""The file formats of the scan, one class each; ``format_class`` picks one by its enum."""

from __future__ import annotations

from collections.abc import Mapping

from connect_plugin.scanning.formats.base import (
    COLUMNS,
    STRING_LIST,
    Decode,
    FileFormat,
    FileSample,
)
from connect_plugin.scanning.formats.delimited import CsvFormat, TextFormat, TsvFormat
from connect_plugin.scanning.formats.json import JsonFormat
from connect_plugin.scanning.formats.parquet import ParquetFormat
from connect_plugin.scanning.options import Format

FORMAT_CLASSES: Mapping[Format, type[FileFormat]] = {
    cls.name: cls for cls in (JsonFormat, CsvFormat, TsvFormat, TextFormat, ParquetFormat)
}


def format_class(name: Format) -> type[FileFormat]:
    return FORMAT_CLASSES[name]


__all__ = [
    "COLUMNS",
    "FORMAT_CLASSES",
    "STRING_LIST",
    "Decode",
    "FileFormat",
    "FileSample",
    "format_class",
]
