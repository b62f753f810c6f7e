"""Delimited text: csv and tsv through pyarrow's csv reader, and text as plain lines.

csv and tsv are the same reader with different delimiters (``,`` and tab),
as in Drill. ``text`` is a line reader: each line is a record, split on the
``delimiter`` option if one is given, with no quoting. Without a header (the
default for csv and tsv, as in Spark and Drill) the fields of a line form
the list column ``columns``, unless a provided schema names them by
position, as Spark's csv reader does.

On the row path both split records in Python (``csv.reader`` set up to split
as pyarrow's parser does, or ``str.split``) and convert each field by the
rules in ``converters``. With an empty projection csv records, which may
hold quoted line breaks, are split by the csv parser into one binary column
that is never converted; text counts lines.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from connect_plugin.errors import InvalidScanSpec, SchemaEvolutionError
from connect_plugin.scanning.files.files import ScanFile
from connect_plugin.scanning.formats.base import (
    COLUMNS,
    STRING_LIST,
    Decode,
    FileFormat,
    FileSample,
    FormatSettings,
)
from connect_plugin.scanning.formats.converters import BadValue, text_converter
from connect_plugin.scanning.formats.records import BadRecordSink, RejectKind, Row
from connect_plugin.scanning.formats.rescue import new_columns_message, rescued_array, rescued_text
from connect_plugin.scanning.names import duplicate_keys, fold

_BOOLEAN_OPTIONS = frozenset({"header", "multiline"})
_ONE_CHARACTER_OPTIONS = frozenset({"quote", "escape"})

Records = Iterator[tuple[int, list[str] | None]]
"""Numbered records (the line each starts on), None for a line that is not text."""


@dataclass(frozen=True)
class DelimitedOptions:
    delimiter: str
    quote: str | None
    escape: str | None
    null_value: str | None
    multiline: bool
    header: bool


class DelimitedFormat(FileFormat):
    """What csv, tsv and text share: fields of lines, named by a header or by position.

    In csv and tsv (``fixed_width``) every record of a file has as many fields
    as its header, or as its first record where there is no header, as in
    Spark's csv reader; a record with fewer or more is a malformed record
    under ``on_error``, kept by ``null`` with the fields it has (the missing
    ones null, the extra ones dropped). Drill's ``columns`` list takes
    records of any width, and so does text.
    """

    default_delimiter = ","
    fixed_width = False

    def __init__(self, settings: FormatSettings) -> None:
        super().__init__(settings)
        quote = settings.option("quote", '"')
        escape = settings.option("escape")
        self.delimited = DelimitedOptions(
            delimiter=settings.option("delimiter", self.default_delimiter)
            or self.default_delimiter,
            quote=quote or None,
            escape=escape or None,
            null_value=settings.option("nullvalue"),
            multiline=settings.option("multiline") == "true",
            header=settings.option("header") == "true",
        )

    @classmethod
    def check_option(cls, key: str, name: str, value: str) -> str:
        if name in _BOOLEAN_OPTIONS:
            value = value.strip().lower()
            if value not in ("true", "false"):
                raise InvalidScanSpec(f"option '{key}' must be true or false, got {value!r}")
        if name in _ONE_CHARACTER_OPTIONS and len(value) > 1:
            raise InvalidScanSpec(
                f"option '{key}' must be one character (or empty to turn it off), got {value!r}"
            )
        if name == "delimiter" and len(value) != 1:
            raise InvalidScanSpec(f"option '{key}' must be exactly one character, got {value!r}")
        return value

    @property
    def has_header(self) -> bool:
        return self.delimited.header

    @property
    def headerless(self) -> bool:
        return not self.has_header

    def sample(self, scan_file: ScanFile) -> FileSample:
        if self.headerless:
            return FileSample(())
        return FileSample(tuple(pa.field(name, pa.string()) for name in self.header(scan_file)))

    def header(self, scan_file: ScanFile) -> list[str]:
        """The fields of a file's first record (its header line); empty for an empty file."""
        head, _ = self.read_head(scan_file, self.settings.sample_bytes)
        text = head.decode("utf-8", errors="replace")
        for row in python_csv_reader(io.StringIO(text), self.delimited):
            if row:
                return row
        return []

    def records(self, lines: Iterator[tuple[int, str | None]]) -> Records:
        raise NotImplementedError

    def row_records(
        self, scan_file: ScanFile, decode: Decode, skip: int, bad: BadRecordSink
    ) -> Iterator[Row]:
        records = self.records(_text_lines(self.lines(scan_file), scan_file, bad))
        keys, leftovers, width = self._positions(decode, records, scan_file)
        converters = [text_converter(f.type) for f in decode.fields]
        texts = [pa.types.is_string(f.type) for f in decode.fields]
        names = [f.name for f in decode.fields]
        rescue = decode.rescue is not None
        nulls = (None,) * len(decode.raw_fields)
        record_number = -1
        for line_number, fields in records:
            record_number += 1
            if fields is not None and width is None and self.fixed_width:
                width = len(fields)
            if record_number < skip:
                continue
            if fields is None:
                if bad.keeps_unreadable():
                    yield nulls
                continue
            cells = self._cells(fields)
            if width is not None and len(fields) != width:
                bad.report(
                    scan_file,
                    line_number,
                    f"the record has {len(fields)} fields where the file has {width}",
                    record=self.delimited.delimiter.join(fields),
                    kind=RejectKind.MALFORMED_RECORD,
                )
                if not bad.keeps_unreadable():
                    continue
                cells = (cells + [None] * width)[:width]
            values: list[Any] = []
            problem = None
            bad_column = None
            rescued: dict[str, Any] = {}
            for name, at, convert, text in zip(names, keys, converters, texts, strict=True):
                given = [
                    (key, cells[index])
                    for key, index in at
                    if index < len(cells) and _has_value(cells[index], text)
                ]
                if len(given) > 1:
                    if not rescue:
                        values.append(None)
                        if problem is None:
                            problem = duplicate_keys(name, [key for key, _ in given])
                            bad_column = name
                        continue
                    rescued.update((key, cell) for key, cell in given if key != name)
                    given = [(key, cell) for key, cell in given if key == name]
                key, cell = given[0] if given else (None, None)
                try:
                    values.append(convert(cell))
                except BadValue as exc:
                    values.append(None)
                    if rescue and key is not None:
                        rescued[key] = cell
                    elif problem is None:
                        problem, bad_column = f"column '{name}': expected {exc}", name
            values += [cells[i] if i < len(cells) else None for i in decode.elements]
            if decode.whole_list:
                values.append(cells)
            if problem is not None and not bad.keeps(
                scan_file,
                line_number,
                problem,
                record=self.delimited.delimiter.join(fields),
                column=bad_column,
            ):
                continue
            if rescue:
                for name, position in leftovers:
                    if position < len(cells) and cells[position] is not None:
                        rescued[name] = cells[position]
                values.append(rescued_text(rescued, scan_file.url) if rescued else None)
            yield tuple(values)

    def _cells(self, fields: list[str]) -> list[str | None]:
        """A record's fields as the columnar reader takes them: ``nullValue`` text is null."""
        null_value = self.delimited.null_value
        if null_value is None:
            return list(fields)
        return [None if field == null_value else field for field in fields]

    def _positions(
        self, decode: Decode, records: Records, scan_file: ScanFile
    ) -> tuple[list[list[tuple[str, int]]], list[tuple[str, int]], int | None]:
        """Per decoded column, its keys and their places in a record (every header name that
        folds to its name, or its position), the header's fields outside the table with
        theirs, and the header's width where records must have it."""
        if self.list_table:
            return [], [], None
        if self.has_header:
            header = next(records, (0, []))[1] or []
            leftovers = [(name, i) for i, name in enumerate(header) if decode.leftover(name)]
            if decode.watches_fields:
                self._check_new(decode, [name for name, _ in leftovers], scan_file)
            width = len(header) if self.fixed_width and header else None
            keys = [
                [(name, i) for i, name in enumerate(header) if fold(name) == fold(f.name)]
                for f in decode.fields
            ]
            return keys, leftovers, width
        keys = []
        for f in decode.fields:
            position = decode.positions.get(fold(f.name))
            keys.append([] if position is None else [(f.name, position)])
        return keys, [], None

    def _check_new(self, decode: Decode, names: list[str], scan_file: ScanFile) -> None:
        if decode.fail_on_new and names:
            raise SchemaEvolutionError(new_columns_message(scan_file.url, names, "the scan's schema"))


class CsvFormat(DelimitedFormat):
    name = "csv"
    fixed_width = True
    option_names = frozenset({"header", "delimiter", "quote", "escape", "nullvalue", "multiline"})

    def native_batches(self, scan_file: ScanFile, decode: Decode) -> Iterator[pa.RecordBatch]:
        """pyarrow's batches, each decoded column under every header name that folds to
        its name (``names``), spelled as the header spells it."""
        file_names = self._file_names(scan_file)
        if not file_names:
            return
        read_names = _read_names(file_names)
        keys = self._keys(decode, file_names, read_names)
        types = {read: read_type for read, _, read_type in keys}
        leftovers: list[tuple[str, str]] = []
        if decode.watches_fields and self.has_header:
            leftovers = [
                (read, name)
                for read, name in zip(read_names, file_names, strict=True)
                if decode.leftover(name)
            ]
            self._check_new(decode, [name for _, name in leftovers], scan_file)
            types.update({read: pa.string() for read, _ in leftovers if read not in types})
        names = [raw for _, raw, _ in keys]
        if decode.whole_list:
            names.append(COLUMNS)
        if decode.rescue is not None:
            names.append(decode.rescue)
        skip = self._skip(scan_file, file_names)
        with self.open(scan_file) as handle:
            for batch in self._reader(handle, read_names, types, skip):
                arrays = [batch.column(read) for read, _, _ in keys]
                if decode.whole_list:
                    arrays.append(strings_to_list([batch.column(read) for read in read_names]))
                if decode.rescue is not None:
                    extras = [(name, batch.column(read)) for read, name in leftovers]
                    arrays.append(rescued_array(extras, batch.num_rows, scan_file.url))
                if not arrays:
                    yield batch.select([])
                    continue
                yield pa.RecordBatch.from_arrays(arrays, names=names)

    def count_rows(self, scan_file: ScanFile) -> Iterator[int]:
        file_names = self._file_names(scan_file)
        if file_names:
            skip = self._skip(scan_file, file_names)
            with self.open(scan_file) as handle:
                for batch in self._reader(handle, _read_names(file_names), {}, skip):
                    yield batch.num_rows

    def records(self, lines: Iterator[tuple[int, str | None]]) -> Records:
        """csv records with the number of the line each starts on; empty lines are skipped."""
        numbers: list[int] = []

        def feed() -> Iterator[str]:
            for number, line in lines:
                if line is not None:
                    numbers.append(number)
                    yield line + "\n"

        for fields in python_csv_reader(feed(), self.delimited):
            start = numbers[0] if numbers else 0
            numbers.clear()
            if fields:
                yield start, fields

    def _file_names(self, scan_file: ScanFile) -> list[str]:
        """The file's column names: its header, or the positions of its first record's fields."""
        first = self.header(scan_file)
        return first if self.has_header else [str(i) for i in range(len(first))]

    def _reader(
        self,
        handle: pa.NativeFile,
        read_names: list[str],
        types: dict[str, pa.DataType],
        skip: int | None,
    ) -> pa_csv.CSVStreamingReader:
        """pyarrow's streaming csv reader for the named columns (the first, as binary, for
        none); ``skip`` is None for a header pyarrow reads, else the records to skip (a
        header that repeats a name is skipped, its columns read by position)."""
        options = self.delimited
        if not types:
            types = {read_names[0]: pa.binary()}
        own_header = skip is None
        return pa_csv.open_csv(
            handle,
            read_options=pa_csv.ReadOptions(
                block_size=self.block_bytes,
                column_names=None if own_header else read_names,
                skip_rows=skip or 0,
                use_threads=False,
            ),
            parse_options=pa_csv.ParseOptions(
                delimiter=options.delimiter,
                quote_char=options.quote or False,
                escape_char=options.escape or False,
                double_quote=options.quote is not None and options.escape is None,
                newlines_in_values=options.multiline,
            ),
            convert_options=pa_csv.ConvertOptions(
                column_types=types,
                include_columns=list(types),
                null_values=[options.null_value] if options.null_value is not None else [""],
                strings_can_be_null=options.null_value is not None,
            ),
        )

    def _skip(self, scan_file: ScanFile, file_names: list[str]) -> int | None:
        """What ``_reader`` skips: None where pyarrow reads the header itself; else the
        records up to the header, blank ones included, as pyarrow's ``skip_rows`` counts
        them (0 without a header)."""
        if not self.has_header:
            return 0
        if not _repeats(file_names):
            return None
        head, _ = self.read_head(scan_file, self.settings.sample_bytes)
        rows = 0
        for row in python_csv_reader(io.StringIO(head.decode("utf-8", errors="replace")), self.delimited):
            rows += 1
            if row:
                break
        return rows

    def _keys(
        self, decode: Decode, file_names: Sequence[str], read_names: Sequence[str]
    ) -> list[tuple[str, str, pa.DataType]]:
        """(pyarrow's name, raw column name, read type) of each file column to decode."""
        keys: list[tuple[str, str, pa.DataType]] = []
        if self.list_table:
            for index in decode.elements:
                if index < len(read_names):
                    keys.append((read_names[index], f"{COLUMNS}[{index}]", pa.string()))
            if decode.whole_list:
                taken = {read for read, _, _ in keys}
                keys += [(read, read, pa.string()) for read in read_names if read not in taken]
            return keys
        if self.has_header:
            wanted = {fold(f.name): f for f in decode.fields}
            for read, name in zip(read_names, file_names, strict=True):
                found = wanted.get(fold(name))
                if found is not None:
                    keys.append((read, name, csv_read_type(found.type)))
            return keys
        for f in decode.fields:
            position = decode.positions[fold(f.name)]
            if position < len(read_names):
                keys.append((read_names[position], f.name, csv_read_type(f.type)))
        return keys


class TsvFormat(CsvFormat):
    name = "tsv"
    default_delimiter = "\t"


class TextFormat(DelimitedFormat):
    """Lines as records; ``delimiter`` splits them into fields, without quoting."""

    name = "text"
    option_names = frozenset({"delimiter"})

    def native_batches(self, scan_file: ScanFile, decode: Decode) -> Iterator[pa.RecordBatch]:
        delimiter = self.settings.option("delimiter")
        for block in self.line_blocks(scan_file):
            lines = _lines(block)
            if delimiter is not None:
                columns = pc.split_pattern(lines, delimiter).cast(STRING_LIST)
            else:
                columns = pa.FixedSizeListArray.from_arrays(lines, 1).cast(STRING_LIST)
            yield pa.RecordBatch.from_arrays([columns], names=[COLUMNS])

    def count_rows(self, scan_file: ScanFile) -> Iterator[int]:
        for block in self.line_blocks(scan_file):
            yield block.count(b"\n") + (not block.endswith(b"\n"))

    def records(self, lines: Iterator[tuple[int, str | None]]) -> Records:
        delimiter = self.settings.option("delimiter")
        for number, line in lines:
            if line is None:
                yield number, None
            else:
                yield number, line.split(delimiter) if delimiter else [line]


def _read_names(file_names: list[str]) -> list[str]:
    """What pyarrow calls a file's columns: the header's names, unless it repeats one (then
    their positions, as for a file without a header)."""
    return [str(i) for i in range(len(file_names))] if _repeats(file_names) else file_names


def _repeats(names: Sequence[str]) -> bool:
    return len(set(names)) < len(names)


def _has_value(cell: str | None, text: bool) -> bool:
    """Whether a field gives its column a value: empty text is null but in a text column."""
    return cell is not None and (text or cell != "")


def csv_read_type(arrow_type: pa.DataType) -> pa.DataType:
    """What pyarrow's csv parser fills strictly enough; zoned timestamps arrive as text."""
    if pa.types.is_timestamp(arrow_type) and arrow_type.tz is not None:
        return pa.string()
    if pa.types.is_nested(arrow_type):
        return pa.string()
    return arrow_type


def python_csv_reader(lines: Iterable[str], options: DelimitedOptions) -> Iterator[list[str]]:
    """A ``csv.reader`` that splits records the way pyarrow's csv parser does."""
    return csv.reader(
        lines,
        delimiter=options.delimiter,
        quotechar=options.quote,
        escapechar=options.escape,
        quoting=csv.QUOTE_MINIMAL if options.quote else csv.QUOTE_NONE,
        doublequote=options.quote is not None and options.escape is None,
        strict=False,
    )


def strings_to_list(columns: Sequence[pa.Array]) -> pa.Array:
    """Row-wise lists of the fields of equally long string columns: Drill's ``columns``."""
    width = len(columns)
    length = len(columns[0]) if columns else 0
    flat = pa.concat_arrays([column.cast(pa.string()) for column in columns])
    order = np.arange(length * width, dtype=np.int64).reshape(width, length).T.ravel()
    offsets = pa.array(np.arange(0, length * width + 1, width, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, flat.take(pa.array(order)), type=STRING_LIST)


def _lines(block: bytes) -> pa.Array:
    """The lines of a block as strings, without their ``\\n`` or ``\\r\\n``."""
    text = pa.array([block], pa.large_binary()).cast(pa.large_string())
    lines = pc.list_flatten(pc.split_pattern(text, "\n"))
    if block.endswith(b"\n"):
        lines = lines.slice(0, len(lines) - 1)
    if b"\r" in block:
        lines = pc.replace_substring_regex(lines, "\r$", "")
    return lines.cast(pa.string())


def _text_lines(
    raw_lines: Iterable[bytes], scan_file: ScanFile, bad: BadRecordSink
) -> Iterator[tuple[int, str | None]]:
    """Numbered lines without their line break; a line that is not UTF-8 is reported, as None."""
    for number, raw in enumerate(raw_lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad.report(
                scan_file,
                number,
                f"the line is not UTF-8 text ({exc.reason})",
                record=raw.decode("utf-8", errors="replace").rstrip("\r\n"),
                kind=RejectKind.INVALID_ENCODING,
            )
            yield number, None
            continue
        yield number, line.removesuffix("\n").removesuffix("\r")
