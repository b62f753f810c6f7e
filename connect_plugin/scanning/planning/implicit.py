"""Implicit file columns and partition columns: values that come from where a file is.

Drill's names and meanings: for ``/data/logs/2024/05/a.json`` scanned from
``/data/logs``, ``filename`` is ``a.json``, ``suffix`` is ``json``, ``fqn``
is the full path ``/data/logs/2024/05/a.json``, ``filepath`` the directory
``/data/logs/2024/05``, ``dir0`` is ``2024``, ``dir1`` is ``05`` and
``dir2`` is null. They exist only when a projection names them (the
wildcard adds ``dir0..dirN``), and they are constants per file, so a batch
gets them as repeated arrays without reading anything.

With ``partitioning="hive"``, directories written ``key=value`` give a
column ``key`` instead. Its type is inferred over all files the way Spark
infers partition columns, narrowed to three outcomes: ``int64`` when every
value is an integer, ``double`` when every value is a number, else
``string``. ``__HIVE_DEFAULT_PARTITION__`` is null and values are
URL-unquoted, matching what Spark writes.

A column of the data of the same name wins over an implicit column
(``projection``). A provided schema can give an implicit column another
name by marking the field with the metadata key ``connect_plugin.implicit``
(values ``filename``, ``filepath``, ``fqn``, ``suffix`` or ``dirN``), as
Drill's ``drill.implicit`` property does: the way to an implicit column a
column of the data shadows.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from connect_plugin.scanning.files.files import ScanFile
from connect_plugin.scanning.names import fold

FILE_COLUMNS = ("filename", "filepath", "fqn", "suffix")
IMPLICIT_MARKER = b"connect_plugin.implicit"
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
DIR_NAME = re.compile(r"^dir(\d+)$", re.IGNORECASE)


def file_column_kind(name: str) -> str | None:
    """``filename``, ``filepath``, ``fqn`` or ``suffix`` if the name is one, any case."""
    folded = fold(name)
    return folded if folded in FILE_COLUMNS else None


def dir_index(name: str) -> int | None:
    """``n`` for a partition column name ``dirN``, any case."""
    match = DIR_NAME.match(name)
    return int(match.group(1)) if match else None


def file_value(kind: str, scan_file: ScanFile) -> str:
    path = scan_file.url
    if kind == "filename":
        return os.path.basename(path)
    if kind == "filepath":
        return os.path.dirname(path)
    if kind == "fqn":
        return path
    if kind == "suffix":
        name = os.path.basename(path)
        return name.rsplit(".", 1)[1] if "." in name.lstrip(".") else ""
    raise ValueError(f"unknown implicit column kind {kind!r}")


def dir_value(index: int, scan_file: ScanFile) -> str | None:
    dirs = scan_file.dirs
    return dirs[index] if index < len(dirs) else None


def hive_pairs(scan_file: ScanFile) -> dict[str, str | None]:
    """The ``key=value`` directories of a file, keys folded (``names``), values unquoted."""
    pairs: dict[str, str | None] = {}
    for part in scan_file.dirs:
        key, equals, value = part.partition("=")
        if equals and key:
            text = unquote(value)
            pairs[fold(unquote(key))] = None if text == HIVE_NULL else text
    return pairs


def hive_columns(files: Iterable[ScanFile]) -> dict[str, tuple[str, pa.DataType]]:
    """Hive partition keys in order of first appearance: folded key -> (spelling, type)."""
    spelling: dict[str, str] = {}
    values: dict[str, list[str]] = {}
    for scan_file in files:
        for part in scan_file.dirs:
            key, equals, _ = part.partition("=")
            if equals and key:
                spelling.setdefault(fold(unquote(key)), unquote(key))
        for key, value in hive_pairs(scan_file).items():
            bucket = values.setdefault(key, [])
            if value is not None:
                bucket.append(value)
    return {key: (spelling[key], infer_hive_type(values.get(key, []))) for key in spelling}


def infer_hive_type(values: Iterable[str]) -> pa.DataType:
    kind = "int"
    for value in values:
        if kind == "int" and not _is_int(value):
            kind = "double"
        if kind == "double" and not _is_float(value):
            return pa.string()
    return pa.int64() if kind == "int" else pa.float64()


def _is_int(text: str) -> bool:
    try:
        number = int(text)
    except ValueError:
        return False
    return -(1 << 63) <= number < (1 << 63)


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def hive_value(text: str | None, arrow_type: pa.DataType) -> Any:
    """A partition directory's value as a Python value of the column's type."""
    if text is None:
        return None
    if pa.types.is_string(arrow_type):
        return text
    return pa.scalar(text).cast(arrow_type).as_py()


def constant_array(value: Any, arrow_type: pa.DataType, length: int) -> pa.Array:
    """``length`` copies of one value: what an implicit column is in every batch of a file."""
    if value is None:
        return pa.nulls(length, type=arrow_type)
    return pa.repeat(pa.scalar(value, type=arrow_type), length)
