"""Newline-delimited json: pyarrow's json reader, and ``json.loads`` per line on the row path.

Json strings stay strings when sampled: pyarrow would turn ISO dates into
timestamps, Spark's json reader and Drill's do not, and a provided schema
can ask for timestamps. When pyarrow rejects the sample (a field that
changes type inside the file), the sample is read again record by record
and the types merged by the widening rules, so that a number that becomes a
double widens, and a real conflict names the file and both lines.

Counting records counts non-blank lines in the bytes, as json readers skip
blank lines.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.json as pa_json

from connect_plugin.errors import SchemaEvolutionError
from connect_plugin.scanning.converters import BadValue, Converter, json_converter
from connect_plugin.scanning.files import ScanFile
from connect_plugin.scanning.formats.base import (
    Decode,
    FileFormat,
    FileSample,
    Row,
)
from connect_plugin.scanning.options import Format
from connect_plugin.scanning.rescue import new_columns_message, rescued_array, rescued_text
from connect_plugin.scanning.widening import TypeClash, merge_types, normalize_type

if TYPE_CHECKING:
    from connect_plugin.scanning.plan import ScanPlan
    from connect_plugin.scanning.rowpath import BadRecords

INT64_RANGE = (-(1 << 63), (1 << 63) - 1)

_BLANK_AFTER_NEWLINE = re.compile(rb"\n[ \t\r\f\v]*(?=\n)")
"""A blank line that follows a line break; anchored on ``\n`` so the search skips ahead fast."""

_BLANK = b" \t\r\f\v"

_MISSING = object()


class JsonFormat(FileFormat):
    name = Format.JSON

    def sample(self, scan_file: ScanFile) -> FileSample:
        head, _ = self.read_head(scan_file, self.spec.sample_bytes)
        conflicts: dict[str, str] = {}
        if not head.strip():
            return FileSample(())
        try:
            table = pa_json.read_json(
                io.BytesIO(head),
                read_options=pa_json.ReadOptions(use_threads=False, block_size=len(head) + 1),
            )
        except pa.ArrowInvalid:
            fields = _fields_by_record(scan_file, head, conflicts)
            return FileSample(tuple(fields), conflicts)
        return FileSample(
            tuple(f.with_type(_strings_stay(normalize_type(f.type))) for f in table.schema)
        )

    def native_batches(
        self, plan: ScanPlan, scan_file: ScanFile, decode: Decode
    ) -> Iterator[pa.RecordBatch]:
        if self.is_empty(scan_file):
            return
        spelled = [f.with_name(plan.spelling(scan_file, f.name)) for f in decode.fields]
        read = pa.schema([f.with_type(json_read_type(f.type)) for f in spelled])
        watch = decode.watches_fields
        with self.open(scan_file) as handle:
            reader = pa_json.open_json(
                handle,
                read_options=pa_json.ReadOptions(block_size=self.block_bytes, use_threads=False),
                parse_options=pa_json.ParseOptions(
                    explicit_schema=read, unexpected_field_behavior="infer" if watch else "ignore"
                ),
            )
            names = [f.name for f in decode.fields]
            for batch in reader:
                if watch:
                    yield _with_leftovers(batch, names, decode, scan_file)
                else:
                    yield batch.rename_columns(names)

    def row_records(
        self, plan: ScanPlan, scan_file: ScanFile, decode: Decode, skip: int, bad: BadRecords
    ) -> Iterator[Row]:
        columns = [
            (f.name, plan.spelling(scan_file, f.name), f.name.casefold(), json_converter(f.type))
            for f in decode.fields
        ]
        nulls = (None,) * len(decode.raw_fields)
        record_number = -1
        for line_number, line in enumerate(self.lines(scan_file), start=1):
            if not line.strip():
                continue
            record_number += 1
            if record_number < skip:
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                text = _text(line)
                if bad.unreadable(scan_file, line_number, f"malformed json ({reason})", text):
                    yield nulls
                continue
            if not isinstance(record, dict):
                text = _text(line)
                if bad.unreadable(scan_file, line_number, "the record is not a json object", text):
                    yield nulls
                continue
            row = _convert_record(record, columns, scan_file, line_number, bad, decode, line)
            if row is not None:
                yield row

    def count_rows(self, scan_file: ScanFile) -> Iterator[int]:
        for block in self.line_blocks(scan_file):
            lines = block.count(b"\n") + (not block.endswith(b"\n"))
            yield lines - _blank_lines(block)


def json_read_type(arrow_type: pa.DataType) -> pa.DataType:
    """What pyarrow's json parser can fill directly; dates and times arrive as text."""
    types = pa.types
    if types.is_date(arrow_type) or types.is_time(arrow_type):
        return pa.string()
    if types.is_list(arrow_type):
        return pa.list_(json_read_type(arrow_type.value_type))
    if types.is_struct(arrow_type):
        return pa.struct(
            [
                arrow_type.field(i).with_type(json_read_type(arrow_type.field(i).type))
                for i in range(arrow_type.num_fields)
            ]
        )
    return arrow_type


def _with_leftovers(
    batch: pa.RecordBatch, names: list[str], decode: Decode, scan_file: ScanFile
) -> pa.RecordBatch:
    """The decoded columns, plus the rescued fields the table does not keep.

    pyarrow's reader puts the fields it was not asked for after the asked-for
    ones; those the table has (columns not projected) are dropped.
    """
    width = len(names)
    extras = [
        (batch.schema.field(index).name, batch.column(index))
        for index in range(width, batch.num_columns)
        if decode.leftover(batch.schema.field(index).name)
    ]
    if decode.fail_on_new and extras:
        where = f"{scan_file.url} (past its sample)"
        raise SchemaEvolutionError(
            new_columns_message(where, [name for name, _ in extras], "the scan's schema")
        )
    arrays = [batch.column(index) for index in range(width)]
    if decode.rescue is None:
        return pa.RecordBatch.from_arrays(arrays, names=names)
    arrays.append(rescued_array(extras, batch.num_rows, scan_file.url))
    return pa.RecordBatch.from_arrays(arrays, names=[*names, decode.rescue])


def _convert_record(
    record: dict[str, Any],
    columns: Sequence[tuple[str, str, str, Converter]],
    scan_file: ScanFile,
    line_number: int,
    bad: BadRecords,
    decode: Decode,
    line: bytes,
) -> Row | None:
    values = []
    folded: dict[str, Any] | None = None
    problem = None
    rescued: dict[str, Any] = {}
    for name, spelled, key, convert in columns:
        value = record.get(spelled, _MISSING)
        if value is _MISSING:
            if folded is None:
                folded = {str(k).casefold(): v for k, v in record.items()}
            value = folded.get(key)
        try:
            values.append(convert(value))
        except BadValue as exc:
            values.append(None)
            if decode.rescue is not None:
                rescued[spelled] = value
            else:
                problem = problem or f"column '{name}': expected {exc}"
    if decode.watches_fields:
        new = [str(key) for key in record if decode.leftover(str(key))]
        if new and decode.fail_on_new:
            where = f"{scan_file.url}, line {line_number},"
            raise SchemaEvolutionError(new_columns_message(where, new, "the scan's schema"))
        for key in new:
            rescued[key] = record[key]
    if problem is not None and not bad.keeps(
        scan_file, line_number, problem, record=_text(line)
    ):
        return None
    if decode.rescue is not None:
        values.append(rescued_text(rescued, scan_file.url) if rescued else None)
    return tuple(values)


def _text(line: bytes) -> str:
    """A record's line as text for a reject, without its line break."""
    return line.decode("utf-8", errors="replace").rstrip("\r\n")


def _blank_lines(block: bytes) -> int:
    """Lines of a block that hold only white space, which json readers skip."""
    blank = len(_BLANK_AFTER_NEWLINE.findall(block))
    first_end = block.find(b"\n")
    if first_end >= 0 and not block[:first_end].strip(_BLANK):
        blank += 1
    last_start = block.rfind(b"\n") + 1
    if last_start < len(block) and not block[last_start:].strip(_BLANK):
        blank += 1
    return blank


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


def _fields_by_record(scan_file: ScanFile, head: bytes, conflicts: dict[str, str]) -> list[pa.Field]:
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
                    f"column '{spelling}{clash.path}' of file {scan_file.url} is "
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
