"""The file formats of the scan, and the one registry where a format's name becomes its class.

``FORMAT_CLASSES`` maps every name a format answers to, in lower case, to
its class; a class listed under a name other than its own ``name`` answers
to that name too (an alias). ``ensure_format`` is the one lookup, as
pyarrow.dataset's ``_ensure_format``: it takes a name in any case, a
``Format`` member, or a format class or instance. ``Format``, the enum a
spec keeps, and every list of format words are made from the registry, so
a new format is its module plus one line here.

The package owns the formats (``base``, ``delimited``, ``json`` with
``json_layout`` and ``json_structure``, ``parquet``) and what a format hands
to the layers above it: records and bad records (``records``), the
conversion of a parsed value on the row path (``converters``), the
rescued-data column (``rescue``) and the rules by which types widen
(``widening``), which the planner also applies across files. A format is
given its settings, the file and a sink for bad records, so it needs
nothing of the spec, the planner or the reader that stand on it.

Imports from the scan: ``choices``, ``names``, ``files``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from connect_plugin.errors import InvalidScanSpec
from connect_plugin.scanning.choices import ScanChoice
from connect_plugin.scanning.formats.base import (
    COLUMNS,
    STRING_LIST,
    Decode,
    FileFormat,
    FileSample,
    FormatSettings,
)
from connect_plugin.scanning.formats.delimited import CsvFormat, TextFormat, TsvFormat
from connect_plugin.scanning.formats.json import JsonFormat
from connect_plugin.scanning.formats.parquet import ParquetFormat

FORMAT_CLASSES: Mapping[str, type[FileFormat]] = {
    "json": JsonFormat,
    "ndjson": JsonFormat,
    "csv": CsvFormat,
    "tsv": TsvFormat,
    "parquet": ParquetFormat,
    "text": TextFormat,
}
"""Every name a format is known by; the order is the order formats are listed to users."""

if TYPE_CHECKING:

    class Format(ScanChoice):
        """The own name of a registered format: one member per class of ``FORMAT_CLASSES``."""

else:
    Format = ScanChoice(
        "Format",
        [(cls.name.upper(), cls.name) for cls in dict.fromkeys(FORMAT_CLASSES.values())],
        module=__name__,
        qualname="Format",
    )
    Format.__doc__ = "The own name of a registered format: one member per class of ``FORMAT_CLASSES``."

ALIASES: Mapping[str, Format] = {
    name: Format(cls.name) for name, cls in FORMAT_CLASSES.items() if name != cls.name
}
"""The names that stand for another format's own name (``ndjson`` for ``json``)."""

_REGISTERED = frozenset(FORMAT_CLASSES.values())


def ensure_format(value: object, option: str = "format") -> type[FileFormat]:
    """The format class that ``value`` names, or an error naming ``option`` and every format.

    Only registered classes are taken, since a spec travels to Spark's
    workers as its format's name and is read back through the registry.
    """
    if isinstance(value, FileFormat):
        value = type(value)
    if isinstance(value, type) and value in _REGISTERED:
        return value
    if isinstance(value, str):
        found = FORMAT_CLASSES.get(value.strip().lower())
        if found is not None:
            return found
    raise InvalidScanSpec(f"{option} must be one of {Format.words()}; got {value!r}")


def format_of(value: object, option: str = "format") -> Format:
    """The ``Format`` member that ``value`` (a name, alias, member, class or instance) stands for."""
    return Format(ensure_format(value, option).name)


__all__ = [
    "ALIASES",
    "COLUMNS",
    "FORMAT_CLASSES",
    "STRING_LIST",
    "Decode",
    "FileFormat",
    "FileSample",
    "Format",
    "FormatSettings",
    "ensure_format",
    "format_of",
]
