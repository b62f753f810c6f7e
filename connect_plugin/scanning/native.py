"""The columnar fast path: pyarrow's own json, csv and parquet readers, and line counting.

Each reader decodes only the table columns the scan needs, with the output
types where the schema knows them, so Arrow neither infers nor converts
twice, and hands over raw batches named by the table's column names. No
Python runs per row. When pyarrow refuses the input (a json field that
changes type, a csv row with a different field count, a value the type does
not parse), it raises and the scanner goes on with the row path from the
first record not yet delivered. Readers run on one thread: Spark already
runs one task per core, and the threads of pyarrow's streaming readers only
add hand-off work (up to a quarter more CPU for json on two cores).

With an empty projection nothing is decoded at all: ``count_rows`` reads
parquet footers and counts json/text lines in the bytes; csv records, which
may hold quoted line breaks, are split by the csv parser into one binary
column that is never converted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from connect_plugin.scanning.files import ScanFile
from connect_plugin.scanning.formats import (
    COLUMNS,
    STRING_LIST,
    DelimitedOptions,
    csv_header,
    delimited_options,
    has_list_table,
)
from connect_plugin.scanning.plan import ScanPlan

BLOCK_BYTES = 4 * 1024 * 1024
"""Bytes pyarrow parses at a time; a json line longer than this goes to the row path."""

_BLANK_AFTER_NEWLINE = re.compile(rb"\n[ \t\r\f\v]*(?=\n)")
"""A blank line that follows a line break; anchored on ``\n`` so the search skips ahead fast."""

_BLANK = b" \t\r\f\v"


@dataclass(frozen=True)
class Decode:
    """What to decode from each file: table columns with read types, and list elements.

    ``elements`` are the ``columns[n]`` a headerless file should deliver as
    ``columns[n]`` string columns; ``whole_list`` asks for ``columns`` itself.
    """

    fields: tuple[pa.Field, ...]
    elements: tuple[int, ...] = ()
    whole_list: bool = False

    @property
    def is_empty(self) -> bool:
        return not self.fields and not self.elements and not self.whole_list


def native_batches(plan: ScanPlan, scan_file: ScanFile, decode: Decode) -> Iterator[pa.RecordBatch]:
    """Raw batches of one file from pyarrow's reader; pyarrow's errors pass through."""
    file_format = plan.spec.format
    if file_format == "json":
        return _json(plan, scan_file, decode)
    if file_format == "parquet":
        return _parquet(plan, scan_file, decode)
    if file_format == "text":
        return _text(plan, scan_file)
    return _csv(plan, scan_file, decode)


def _json(plan: ScanPlan, scan_file: ScanFile, decode: Decode) -> Iterator[pa.RecordBatch]:
    if scan_file.size == 0:
        return
    spelled = [f.with_name(plan.spelling(scan_file, f.name)) for f in decode.fields]
    read = pa.schema([f.with_type(json_read_type(f.type)) for f in spelled])
    reader = pa_json.open_json(
        scan_file.path,
        read_options=pa_json.ReadOptions(block_size=BLOCK_BYTES, use_threads=False),
        parse_options=pa_json.ParseOptions(
            explicit_schema=read, unexpected_field_behavior="ignore"
        ),
    )
    names = [f.name for f in decode.fields]
    for batch in reader:
        yield batch.rename_columns(names)


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


def csv_read_type(arrow_type: pa.DataType) -> pa.DataType:
    """What pyarrow's csv parser fills strictly enough; zoned timestamps arrive as text."""
    if pa.types.is_timestamp(arrow_type) and arrow_type.tz is not None:
        return pa.string()
    if pa.types.is_nested(arrow_type):
        return pa.string()
    return arrow_type


def _parquet(plan: ScanPlan, scan_file: ScanFile, decode: Decode) -> Iterator[pa.RecordBatch]:
    parquet = pq.ParquetFile(scan_file.path)
    present = {name.casefold(): name for name in parquet.schema_arrow.names}
    chosen = [
        (f.name, present[f.name.casefold()]) for f in decode.fields if f.name.casefold() in present
    ]
    table_names = [table_name for table_name, _ in chosen]
    for batch in parquet.iter_batches(
        batch_size=plan.spec.max_rows, columns=[spelled for _, spelled in chosen], use_threads=False
    ):
        yield batch.rename_columns(table_names)


def _csv(plan: ScanPlan, scan_file: ScanFile, decode: Decode) -> Iterator[pa.RecordBatch]:
    file_names = _csv_names(plan, scan_file)
    if not file_names:
        return
    wanted = _csv_columns(plan, decode, file_names)
    types = {spelled: read_type for spelled, (_, read_type) in wanted.items()}
    names = [table_name for table_name, _ in wanted.values()]
    for batch in _open_csv(plan, scan_file, file_names, types):
        arrays = [batch.column(spelled) for spelled in wanted]
        if decode.whole_list:
            arrays.append(strings_to_list([batch.column(name) for name in file_names]))
        if not arrays:
            yield batch.select([])
            continue
        yield pa.RecordBatch.from_arrays(arrays, names=[*names, COLUMNS][: len(arrays)])


def _csv_names(plan: ScanPlan, scan_file: ScanFile) -> list[str]:
    """The file's column names: its header, or the positions of its first record's fields."""
    first = csv_header(scan_file.path, plan.spec)
    return first if plan.spec.has_header else [str(i) for i in range(len(first))]


def _open_csv(
    plan: ScanPlan,
    scan_file: ScanFile,
    file_names: list[str],
    types: dict[str, pa.DataType],
) -> pa_csv.CSVStreamingReader:
    """pyarrow's streaming csv reader for the named columns (the first, as binary, for none)."""
    spec = plan.spec
    options = delimited_options(spec)
    if not types:
        types = {file_names[0]: pa.binary()}
    return pa_csv.open_csv(
        scan_file.path,
        read_options=pa_csv.ReadOptions(
            block_size=BLOCK_BYTES,
            column_names=None if spec.has_header else file_names,
            use_threads=False,
        ),
        parse_options=_parse_options(options),
        convert_options=pa_csv.ConvertOptions(
            column_types=types,
            include_columns=list(types),
            null_values=[options.null_value] if options.null_value is not None else [""],
            strings_can_be_null=options.null_value is not None,
        ),
    )


def _csv_columns(
    plan: ScanPlan, decode: Decode, file_names: Sequence[str]
) -> dict[str, tuple[str, pa.DataType]]:
    """File column -> (raw column name, read type) for each column to decode."""
    wanted: dict[str, tuple[str, pa.DataType]] = {}
    if has_list_table(plan.spec):
        for index in decode.elements:
            if index < len(file_names):
                wanted[file_names[index]] = (f"{COLUMNS}[{index}]", pa.string())
        if decode.whole_list:
            for name in file_names:
                wanted.setdefault(name, (name, pa.string()))
        return wanted
    if plan.spec.has_header:
        present = {name.casefold(): name for name in file_names}
        for f in decode.fields:
            spelled = present.get(f.name.casefold())
            if spelled is not None:
                wanted[spelled] = (f.name, csv_read_type(f.type))
        return wanted
    positions = {f.name.casefold(): i for i, f in enumerate(plan.table.data_fields)}
    for f in decode.fields:
        position = positions[f.name.casefold()]
        if position < len(file_names):
            wanted[file_names[position]] = (f.name, csv_read_type(f.type))
    return wanted


def _parse_options(options: DelimitedOptions) -> pa_csv.ParseOptions:
    return pa_csv.ParseOptions(
        delimiter=options.delimiter,
        quote_char=options.quote or False,
        escape_char=options.escape or False,
        double_quote=options.quote is not None and options.escape is None,
        newlines_in_values=options.multiline,
    )


def strings_to_list(columns: Sequence[pa.Array]) -> pa.Array:
    """Row-wise lists of the fields of equally long string columns: Drill's ``columns``."""
    width = len(columns)
    length = len(columns[0]) if columns else 0
    flat = pa.concat_arrays([column.cast(pa.string()) for column in columns])
    order = np.arange(length * width, dtype=np.int64).reshape(width, length).T.ravel()
    offsets = pa.array(np.arange(0, length * width + 1, width, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, flat.take(pa.array(order)), type=STRING_LIST)


def _text(plan: ScanPlan, scan_file: ScanFile) -> Iterator[pa.RecordBatch]:
    delimiter = plan.spec.option("delimiter")
    for block in _line_blocks(scan_file.path):
        lines = _lines(block)
        if delimiter is not None:
            columns = pc.split_pattern(lines, delimiter).cast(STRING_LIST)
        else:
            columns = pa.FixedSizeListArray.from_arrays(lines, 1).cast(STRING_LIST)
        yield pa.RecordBatch.from_arrays([columns], names=[COLUMNS])


def _line_blocks(path: str) -> Iterator[bytes]:
    """The file in blocks of whole lines (the last one may lack its line break)."""
    pending = b""
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(BLOCK_BYTES)
            if not chunk:
                if pending:
                    yield pending
                return
            data = pending + chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                pending = data
                continue
            pending = data[cut + 1 :]
            yield data[: cut + 1]


def _lines(block: bytes) -> pa.Array:
    """The lines of a block as strings, without their ``\\n`` or ``\\r\\n``."""
    text = pa.array([block], pa.large_binary()).cast(pa.large_string())
    lines = pc.list_flatten(pc.split_pattern(text, "\n"))
    if block.endswith(b"\n"):
        lines = lines.slice(0, len(lines) - 1)
    if b"\r" in block:
        lines = pc.replace_substring_regex(lines, "\r$", "")
    return lines.cast(pa.string())


def count_rows(plan: ScanPlan, scan_file: ScanFile) -> Iterator[int]:
    """Record counts of one file, in pieces, without decoding a value."""
    file_format = plan.spec.format
    if file_format == "parquet":
        yield pq.ParquetFile(scan_file.path).metadata.num_rows
    elif file_format in ("json", "text"):
        for block in _line_blocks(scan_file.path):
            lines = block.count(b"\n") + (not block.endswith(b"\n"))
            yield lines - _blank_lines(block) if file_format == "json" else lines
    else:
        file_names = _csv_names(plan, scan_file)
        if file_names:
            for batch in _open_csv(plan, scan_file, file_names, {}):
                yield batch.num_rows


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
