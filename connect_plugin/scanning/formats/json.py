"""Json files in any of three layouts: one object per line, a top-level array, or documents.

``JsonLayout`` names the layouts and how ``auto`` picks one per file. Lines
go to pyarrow's json reader as they are, documents with its
``newlines_in_values``, and the elements of an array as lines cut by
``json_structure``; the row path parses each record with ``json.loads``.
Every layout reports a record that is not an object (a top-level scalar,
an array element that is a number, an array among documents) as a bad
record with its line and byte offset, never as a row without columns.

Json strings stay strings when sampled: pyarrow would turn ISO dates into
timestamps, Spark's json reader and Drill's do not, and a provided schema
can ask for timestamps. When pyarrow rejects the sample (a field that
changes type inside the file), the sample is read again record by record
and the types merged by the widening rules, so that a number that becomes a
double widens, and a real conflict names the file and both lines.

Counting records decodes nothing: lines count non-blank lines in the bytes,
as json readers skip blank lines; arrays and documents count the values
``json_structure`` finds between brackets and commas.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json

from connect_plugin.scanning.choices import choice
from connect_plugin.scanning.files.files import ScanFile
from connect_plugin.scanning.formats.base import (
    HEAD_CHUNK,
    Decode,
    FileFormat,
    FileSample,
    FormatSettings,
)
from connect_plugin.scanning.formats.converters import json_converter
from connect_plugin.scanning.formats.json_keys import JsonKeys
from connect_plugin.scanning.formats.json_layout import JsonLayout, detect_layout
from connect_plugin.scanning.formats.json_records import (
    RecordTexts,
    convert_record,
    record_text,
    with_leftovers,
)
from connect_plugin.scanning.formats.json_structure import (
    Event,
    Region,
    Unit,
    count_units,
    record_lines,
    units,
)
from connect_plugin.scanning.formats.records import BadRecordSink, Row, place_text
from connect_plugin.scanning.formats.widening import TypeClash, merge_types, normalize_type
from connect_plugin.scanning.names import fold

INT64_RANGE = (-(1 << 63), (1 << 63) - 1)

_BLANK_AFTER_NEWLINE = re.compile(rb"\n[ \t\r\f\v]*(?=\n)")
"""A blank line that follows a line break; anchored on ``\n`` so the search skips ahead fast."""

_BLANK = b" \t\r\f\v"

_NULL_LINE = re.compile(rb"\n[ \t\r]*null")
"""A line that starts with the literal null; anchored on ``\n`` so the search skips ahead fast."""

_MISSING = object()

LAYOUT_OPTION = "json_format"
"""The reader option that names the layout (DuckDB's ``format`` of ``read_json``)."""

DETECT_BYTES = 64 * 1024
"""Bytes of a file's head that ``auto`` looks at; a first line may be longer than this."""

_NOT_AN_OBJECT = {
    Region.GAP: "a top-level value that is {kind}, not an object",
    Region.ELEMENT: "an array element that is {kind}, not an object",
}


@dataclass(frozen=True)
class Place:
    """Where a record starts: its line, and its byte offset in the file where lines are long."""

    line: int
    offset: int | None = None

    def __str__(self) -> str:
        return place_text(self.line, self.offset)


class JsonFormat(FileFormat):
    name = "json"
    option_names = frozenset({LAYOUT_OPTION})
    records_can_be_bad = True

    def __init__(self, settings: FormatSettings) -> None:
        super().__init__(settings)
        self.layout = choice(LAYOUT_OPTION, settings.option(LAYOUT_OPTION, "auto"), JsonLayout)
        self._layouts: dict[str, JsonLayout] = {}

    @classmethod
    def check_option(cls, key: str, name: str, value: str) -> str:
        return choice(f"option '{key}'", value, JsonLayout).value

    def file_layout(self, scan_file: ScanFile) -> JsonLayout:
        """The layout of one file: the option's, or what ``auto`` finds in the file's head."""
        if self.layout is not JsonLayout.AUTO:
            return self.layout
        found = self._layouts.get(scan_file.path)
        if found is None:
            with self.open(scan_file) as handle:
                found = detect_layout(handle.read(min(DETECT_BYTES, self.settings.sample_bytes)))
            self._layouts[scan_file.path] = found
        return found

    def blocks(self, scan_file: ScanFile, size: int | None = None) -> Iterator[bytes]:
        """The file's bytes in blocks of ``size`` (the parse block by default)."""
        with self.open(scan_file) as handle:
            while chunk := handle.read(size or self.block_bytes):
                yield chunk

    def sample(self, scan_file: ScanFile) -> FileSample:
        if self.file_layout(scan_file) is JsonLayout.LINES:
            head, _ = self.read_head(scan_file, self.settings.sample_bytes)
            numbered = list(enumerate(head.splitlines(), start=1))
        else:
            head, numbered = self._sampled_records(scan_file)
        conflicts: dict[str, str] = {}
        if not head.strip():
            return FileSample(())
        try:
            table = read_lines(head, pa_json.ParseOptions())
        except pa.ArrowInvalid:
            fields = _fields_by_record(scan_file, numbered, conflicts)
            return FileSample(tuple(fields), conflicts)
        return FileSample(
            tuple(f.with_type(_strings_stay(normalize_type(f.type))) for f in table.schema)
        )

    def _sampled_records(self, scan_file: ScanFile) -> tuple[bytes, list[tuple[int, bytes]]]:
        """The objects of an array or documents file's head, one per line, and their lines.

        Records are taken whole until ``sample_bytes`` are passed, so a
        sample holds at least one record however long it is.
        """
        numbered = []
        layout = self.file_layout(scan_file)
        blocks = self.blocks(scan_file, min(HEAD_CHUNK, self.settings.sample_bytes))
        for unit in units(blocks, layout):
            if unit.text.startswith(b"{") and _unit_problem(unit, layout) is None:
                numbered.append((unit.line, unit.text.replace(b"\n", b" ")))
            if unit.offset + len(unit.text) >= self.settings.sample_bytes:
                break
        return b"\n".join(text for _, text in numbered), numbered

    def native_batches(self, scan_file: ScanFile, decode: Decode) -> Iterator[pa.RecordBatch]:
        """pyarrow's batches, each decoded column under every key of the block that folds
        to it (``json_keys``), the rescued column made from the records' text."""
        if self.is_empty(scan_file):
            return
        keys = JsonKeys(decode, {f.name: json_read_type(f.type) for f in decode.fields})
        watch = decode.watches_fields
        for block in self._record_blocks(scan_file):
            table = _block_table(block, keys, watch)
            width = len(keys.read_fields())
            texts = RecordTexts(block, table.num_rows)
            start = 0
            for batch in table.to_batches():
                yield with_leftovers(batch, width, decode, scan_file, texts.rows(start))
                start += batch.num_rows

    def _record_blocks(self, scan_file: ScanFile) -> Iterator[bytes]:
        """The file's records, one per line, a block of whole lines at a time."""
        layout = self.file_layout(scan_file)
        if layout is JsonLayout.LINES:
            blocks = self.line_blocks(scan_file)
        else:
            blocks = record_lines(self.blocks(scan_file), layout)
        for block in blocks:
            if not block.isspace():
                yield block

    def row_records(
        self, scan_file: ScanFile, decode: Decode, skip: int, bad: BadRecordSink
    ) -> Iterator[Row]:
        columns = [(f.name, json_converter(f.type)) for f in decode.fields]
        nulls = (None,) * len(decode.raw_fields)
        for number, (place, text, problem) in enumerate(self._records(scan_file)):
            if number < skip:
                continue
            record: Any = None
            if problem is None:
                try:
                    record = json.loads(text)
                except ValueError as exc:
                    reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                    problem = f"malformed json ({reason})"
            if problem is None and not isinstance(record, dict):
                problem = f"the record is {_kind(record)}, not a json object"
            if problem is not None:
                if bad.unreadable(
                    scan_file, place.line, problem, record_text(text), place.offset
                ):
                    yield nulls
                continue
            where = (place.line, place.offset)
            row = convert_record(record, columns, scan_file, where, bad, decode, text)
            if row is not None:
                yield row

    def _records(self, scan_file: ScanFile) -> Iterator[tuple[Place, bytes, str | None]]:
        """Each record's place and text, or what makes it no record (in the order read)."""
        layout = self.file_layout(scan_file)
        if layout is JsonLayout.LINES:
            for line_number, line in enumerate(self.lines(scan_file), start=1):
                if line.strip():
                    yield Place(line_number), line, None
            return
        for unit in units(self.blocks(scan_file), layout):
            yield Place(unit.line, unit.offset), unit.text, _unit_problem(unit, layout)

    def count_rows(self, scan_file: ScanFile) -> Iterator[int]:
        layout = self.file_layout(scan_file)
        if layout is not JsonLayout.LINES:
            yield from count_units(self.blocks(scan_file), layout)
            return
        for block in self.line_blocks(scan_file):
            lines = block.count(b"\n") + (not block.endswith(b"\n"))
            yield lines - _blank_lines(block)


def _unit_problem(unit: Unit, layout: JsonLayout) -> str | None:
    """Why a unit of an array or documents file is no record; None when it may be one."""
    if unit.region is Region.GAP:
        if unit.text in (b"]", b"}"):
            return "a closing bracket without its opening one; the rest of the file is unreadable"
        return _NOT_AN_OBJECT[Region.GAP].format(kind=_kind_of_text(unit.text))
    if unit.region is Region.ELEMENT:
        if unit.text.startswith(b"{"):
            return None
        return _NOT_AN_OBJECT[Region.ELEMENT].format(kind=_kind_of_text(unit.text))
    if layout is JsonLayout.ARRAY:
        return (
            "an object outside a top-level array; read the file with json_format='documents' "
            "or 'auto'"
        )
    if unit.top is Event.OPEN_ARRAY:
        return "a top-level array among documents; read the file with json_format='array' or 'auto'"
    return None


def _kind_of_text(text: bytes) -> str:
    """What a value's text holds, for messages: 'a number', 'an array', ..."""
    try:
        return _kind(json.loads(text))
    except ValueError:
        return "malformed json"


def _kind(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return f"the literal {json.dumps(value)}"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _block_table(block: bytes, keys: JsonKeys, watch: bool) -> pa.Table:
    """One block parsed asking for every known spelling of each decoded column.

    Fields outside the table are inferred when they are watched (rescued, or an error);
    a block that may spell a decoded column anew is first parsed with every field
    inferred, to learn its spellings (``JsonKeys``).
    """
    if watch or keys.may_hide(block):
        table = read_lines(block, _parse_options(keys, infer=True))
        if not keys.learn(table.schema):
            return table
    return read_lines(block, _parse_options(keys, infer=watch))


def _parse_options(keys: JsonKeys, infer: bool) -> pa_json.ParseOptions:
    return pa_json.ParseOptions(
        explicit_schema=pa.schema(keys.read_fields()),
        unexpected_field_behavior="infer" if infer else "ignore",
    )


def read_lines(block: bytes, parse: pa_json.ParseOptions) -> pa.Table:
    """One block of whole json lines through pyarrow's reader.

    pyarrow takes a line ``null`` for a row of nulls, and crashes the
    process when such a line starts one of its chunks; a top-level null is
    no record, so a block that has one is refused (``ArrowInvalid``) before
    pyarrow sees it, and the row path reports it as a bad record.
    """
    if block.lstrip().startswith(b"null") or _NULL_LINE.search(block):
        raise pa.ArrowInvalid("a record is the json literal null")
    options = pa_json.ReadOptions(block_size=len(block) + 1, use_threads=False)
    return pa_json.read_json(pa.BufferReader(block), read_options=options, parse_options=parse)


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


def _fields_by_record(
    scan_file: ScanFile, numbered: Iterable[tuple[int, bytes]], conflicts: dict[str, str]
) -> list[pa.Field]:
    """Column types of a sample pyarrow rejected, merged record by record with line numbers."""
    columns: dict[str, tuple[str, pa.DataType, int]] = {}
    for number, line in numbered:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        for name, value in record.items():
            key = fold(name)
            spelling, known_type, first_line = columns.get(key, (name, pa.null(), number))
            try:
                merged = merge_types(known_type, python_type(value))
            except TypeClash as clash:
                conflicts.setdefault(
                    key,
                    f"column '{spelling}{clash.path}' of file {scan_file.url} is "
                    f"{clash.left} up to line {first_line} and {clash.right} on line {number}; "
                    "no widening rule joins them. Give the column's type in the scan's "
                    "schema to convert every value to it, scan with on_error='null' or 'skip' "
                    "to keep the first type and take values that do not convert as bad "
                    "records, or fix the file",
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
