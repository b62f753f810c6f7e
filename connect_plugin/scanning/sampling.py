"""The columns of one file, learned from a bounded look at it.

Planning must not read whole files: a json file is judged by its first
``sample_bytes`` (cut after the last whole line), a csv/tsv file by its
header line, a parquet file by its footer. Headerless csv/tsv and text need
no look at all: their table is the ``columns`` list.

Json strings stay strings: pyarrow would turn ISO dates into timestamps,
Spark's json reader and Drill's do not, and a provided schema can ask for
timestamps. When pyarrow rejects the sample (a field that changes type
inside the file), the sample is read again record by record in Python and
the types merged by the widening rules, so that a number that becomes a
double widens, and a real conflict names the file and both lines.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from connect_plugin.errors import ScanError
from connect_plugin.scanning.files import ScanFile
from connect_plugin.scanning.formats import csv_header, is_headerless, read_head
from connect_plugin.scanning.spec import ScanSpec
from connect_plugin.scanning.widening import TypeClash, merge_types, normalize_type, nullable_type

SAMPLE_THREADS = 8
"""Files sampled at once; pyarrow's parsers release the GIL, and the work is mostly I/O."""

INT64_RANGE = (-(1 << 63), (1 << 63) - 1)


@dataclass(frozen=True)
class FileSample:
    """A file's top-level columns as the file spells them, in the file's order.

    ``conflicts`` maps a folded column name to the message describing a type
    change inside the file; whether it is an error depends on the provided
    schema and the projection, so the sample only reports it.
    """

    fields: tuple[pa.Field, ...]
    conflicts: Mapping[str, str] = field(default_factory=dict)


def needs_sampling(spec: ScanSpec) -> bool:
    """Whether files of this format name their columns (headerless text does not)."""
    return not is_headerless(spec)


def sample_files(spec: ScanSpec, files: Sequence[ScanFile]) -> list[FileSample]:
    """The sample of every file, in file order; threads overlap the reads."""
    if len(files) <= 1:
        return [sample_file(spec, found) for found in files]
    with ThreadPoolExecutor(max_workers=min(SAMPLE_THREADS, len(files))) as pool:
        return list(pool.map(lambda found: sample_file(spec, found), files))


def sample_file(spec: ScanSpec, scan_file: ScanFile) -> FileSample:
    """One file's columns, every type nullable: a value missing later is null, not an error."""
    conflicts: dict[str, str] = {}
    try:
        if spec.format == "parquet":
            schema = pq.read_schema(scan_file.path)
            fields = [f.with_type(normalize_type(f.type)) for f in schema]
        elif spec.format == "json":
            fields = _json_fields(scan_file, spec.sample_bytes, conflicts)
        elif is_headerless(spec):
            fields = []
        else:
            fields = [pa.field(name, pa.string()) for name in csv_header(scan_file.path, spec)]
    except (OSError, pa.ArrowException) as exc:
        raise ScanError(f"cannot read file {scan_file.path} to learn its columns: {exc}") from exc
    nullable = tuple(pa.field(f.name, nullable_type(f.type)) for f in fields)
    return FileSample(nullable, conflicts)


def _json_fields(scan_file: ScanFile, limit: int, conflicts: dict[str, str]) -> list[pa.Field]:
    head, _ = read_head(scan_file.path, limit)
    if not head.strip():
        return []
    try:
        table = pa_json.read_json(
            io.BytesIO(head),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=len(head) + 1),
        )
    except pa.ArrowInvalid:
        return _json_fields_by_record(scan_file, head, conflicts)
    return [f.with_type(_strings_stay(normalize_type(f.type))) for f in table.schema]


def _strings_stay(arrow_type: pa.DataType) -> pa.DataType:
    """Undo pyarrow's guess that ISO-looking strings are timestamps."""
    types = pa.types
    if types.is_timestamp(arrow_type) or types.is_date(arrow_type):
        return pa.string()
    if types.is_list(arrow_type):
        return pa.list_(_strings_stay(arrow_type.value_type))
    if types.is_struct(arrow_type):
        return pa.struct(
            [
                arrow_type.field(i).with_type(_strings_stay(arrow_type.field(i).type))
                for i in range(arrow_type.num_fields)
            ]
        )
    return arrow_type


def _json_fields_by_record(
    scan_file: ScanFile, head: bytes, conflicts: dict[str, str]
) -> list[pa.Field]:
    """Column types of a sample pyarrow rejected, merged record by record with line numbers."""
    columns: dict[str, tuple[str, pa.DataType, int]] = {}
    for number, line in enumerate(head.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        for name, value in record.items():
            key = name.casefold()
            spelling, known_type, first_line = columns.get(key, (name, pa.null(), number))
            try:
                merged = merge_types(known_type, python_type(value))
            except TypeClash as clash:
                conflicts.setdefault(
                    key,
                    f"column '{spelling}{clash.path}' of file {scan_file.path} is "
                    f"{clash.left} up to line {first_line} and {clash.right} on line {number}; "
                    "no widening rule joins them. Give the column's type in the scan's "
                    "schema to convert every value to it, or fix the file",
                )
                continue
            columns[key] = (spelling, merged, first_line)
    return [pa.field(name, arrow_type) for name, arrow_type, _ in columns.values()]


def python_type(value: Any) -> pa.DataType:
    """The Arrow type a parsed json value asks for; ``null`` for None and empty lists."""
    if value is None:
        return pa.null()
    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        low, high = INT64_RANGE
        return pa.int64() if low <= value <= high else pa.float64()
    if isinstance(value, float):
        return pa.float64()
    if isinstance(value, str):
        return pa.string()
    if isinstance(value, list):
        element = pa.null()
        for item in value:
            try:
                element = merge_types(element, python_type(item))
            except TypeClash as clash:
                raise TypeClash(clash.left, clash.right, "[]" + clash.path) from None
        return pa.list_(element)
    if isinstance(value, dict):
        return pa.struct([pa.field(str(key), python_type(item)) for key, item in value.items()])
    return pa.string()
