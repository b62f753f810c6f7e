"""The row path: records pyarrow's readers refused, read one by one through the loader.

A json file whose field changes type mid-file, a csv file with ragged rows
or a value its column type does not parse: the scanner hands the rest of
such a file here, from the first record the columnar path did not deliver.
Each record is parsed in Python, each value converted by the rules in
``converters``, and the row written through a ``ResultSetLoader``, which
keeps every batch within the scan's row and byte limits.

A record that cannot be read at all (malformed json, not an object) or a
value that does not convert is a bad record, and ``BadRecords`` applies the
scan's ``on_error`` policy: ``fail`` raises naming the file, the line and
the column; ``skip`` drops the record; ``null`` keeps it with the bad
values (or, for an unreadable record, every value) null.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from connect_plugin.errors import BadRecord
from connect_plugin.scanning.converters import BadValue, Converter, json_converter, text_converter
from connect_plugin.scanning.files import ScanFile
from connect_plugin.scanning.formats import (
    COLUMNS,
    STRING_LIST,
    delimited_options,
    has_list_table,
    python_csv_reader,
)
from connect_plugin.scanning.loader import ResultSetLoader
from connect_plugin.scanning.native import Decode
from connect_plugin.scanning.plan import ScanPlan

log = logging.getLogger(__name__)

_MISSING = object()


class BadRecords:
    """Applies ``on_error`` to bad records and counts the ones it skipped or nulled."""

    def __init__(self, on_error: str) -> None:
        self.on_error = on_error
        self.count = 0
        self._per_file: dict[str, tuple[int, str]] = {}

    def report(self, scan_file: ScanFile, line: int, reason: str, unit: str = "line") -> None:
        """Record one bad record (at a line, or a row for parquet); ``fail`` raises ``BadRecord``."""
        if self.on_error == "fail":
            raise BadRecord(
                f"file {scan_file.path}, {unit} {line}: {reason}; fix the record, or scan with "
                "on_error='skip' to drop bad records or on_error='null' to null bad values"
            )
        self.count += 1
        seen, first = self._per_file.get(scan_file.path, (0, f"{unit} {line}: {reason}"))
        self._per_file[scan_file.path] = (seen + 1, first)

    def finish_file(self, scan_file: ScanFile) -> None:
        """Log how many bad records the file had, once per file."""
        seen = self._per_file.pop(scan_file.path, None)
        if seen is not None:
            action = "skipped" if self.on_error == "skip" else "kept with null values"
            log.warning(
                "file %s: %d bad record(s) %s (first at %s)",
                scan_file.path,
                seen[0],
                action,
                seen[1],
            )


def row_batches(
    plan: ScanPlan,
    scan_file: ScanFile,
    decode: Decode,
    skip: int,
    bad: BadRecords,
) -> Iterator[pa.RecordBatch]:
    """Raw batches of a file from record ``skip`` on (counting from 0), parsed in Python."""
    fields = _raw_fields(decode)
    if plan.spec.format == "json":
        records = _json_rows(plan, scan_file, decode, skip, bad)
    else:
        records = _delimited_rows(plan, scan_file, decode, skip, bad)
    loader = ResultSetLoader(
        pa.schema(fields), max_rows=plan.spec.max_rows, max_bytes=plan.spec.max_bytes
    )
    with loader:
        writer = loader.writer
        loader.start_batch()
        pending: list[tuple[Any, ...]] = []
        for row in records:
            pending.append(row)
            if len(pending) >= plan.spec.max_rows:
                yield from _write(loader, pending)
                pending = []
        yield from _write(loader, pending)
        if writer.row_count or loader.has_lookahead:
            yield loader.harvest()
            if loader.has_lookahead:
                loader.start_batch()
                yield loader.harvest()


def _write(loader: ResultSetLoader, rows: list[tuple[Any, ...]]) -> Iterator[pa.RecordBatch]:
    start = 0
    while start < len(rows):
        start += loader.writer.write_rows(rows, start)
        if loader.writer.is_full():
            yield loader.harvest()
            loader.start_batch()


def _raw_fields(decode: Decode) -> list[pa.Field]:
    fields = [pa.field(f.name, f.type) for f in decode.fields]
    fields += [pa.field(f"{COLUMNS}[{index}]", pa.string()) for index in decode.elements]
    if decode.whole_list:
        fields.append(pa.field(COLUMNS, STRING_LIST))
    return fields


def _json_rows(
    plan: ScanPlan, scan_file: ScanFile, decode: Decode, skip: int, bad: BadRecords
) -> Iterator[tuple[Any, ...]]:
    columns = [
        (f.name, plan.spelling(scan_file, f.name), f.name.casefold(), json_converter(f.type))
        for f in decode.fields
    ]
    nulls = (None,) * len(columns)
    record_number = -1
    with open(scan_file.path, "rb") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            record_number += 1
            if record_number < skip:
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                bad.report(scan_file, line_number, f"malformed json ({reason})")
                if bad.on_error == "null":
                    yield nulls
                continue
            if not isinstance(record, dict):
                bad.report(scan_file, line_number, "the record is not a json object")
                if bad.on_error == "null":
                    yield nulls
                continue
            row = _convert_record(record, columns, scan_file, line_number, bad)
            if row is not None:
                yield row


def _convert_record(
    record: dict[str, Any],
    columns: Sequence[tuple[str, str, str, Converter]],
    scan_file: ScanFile,
    line_number: int,
    bad: BadRecords,
) -> tuple[Any, ...] | None:
    values = []
    folded: dict[str, Any] | None = None
    problem = None
    for name, spelled, key, convert in columns:
        value = record.get(spelled, _MISSING)
        if value is _MISSING:
            if folded is None:
                folded = {str(k).casefold(): v for k, v in record.items()}
            value = folded.get(key)
        try:
            values.append(convert(value))
        except BadValue as exc:
            problem = problem or f"column '{name}': expected {exc}"
            values.append(None)
    if problem is not None:
        bad.report(scan_file, line_number, problem)
        if bad.on_error == "skip":
            return None
    return tuple(values)


def _delimited_rows(
    plan: ScanPlan, scan_file: ScanFile, decode: Decode, skip: int, bad: BadRecords
) -> Iterator[tuple[Any, ...]]:
    spec = plan.spec
    lines = _text_lines(scan_file, bad)
    if spec.format == "text":
        delimiter = spec.option("delimiter")
        records: Iterator[tuple[int, list[str] | None]] = (
            (number, None if line is None else line.split(delimiter) if delimiter else [line])
            for number, line in lines
        )
    else:
        records = _csv_records(lines, plan)
    positions = _positions(plan, decode, records)
    converters = [text_converter(f.type) for f in decode.fields]
    nulls = (None,) * len(_raw_fields(decode))
    record_number = -1
    for line_number, fields in records:
        record_number += 1
        if record_number < skip:
            continue
        if fields is None:
            if bad.on_error == "null":
                yield nulls
            continue
        values: list[Any] = []
        problem = None
        for name, position, convert in zip(
            [f.name for f in decode.fields], positions, converters, strict=True
        ):
            text = fields[position] if position is not None and position < len(fields) else None
            try:
                values.append(convert(text))
            except BadValue as exc:
                problem = problem or f"column '{name}': expected {exc}"
                values.append(None)
        values += [fields[i] if i < len(fields) else None for i in decode.elements]
        if decode.whole_list:
            values.append(fields)
        if problem is not None:
            bad.report(scan_file, line_number, problem)
            if bad.on_error == "skip":
                continue
        yield tuple(values)


def _text_lines(scan_file: ScanFile, bad: BadRecords) -> Iterator[tuple[int, str | None]]:
    """Numbered lines without their line break; a line that is not UTF-8 is reported, as None."""
    with open(scan_file.path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad.report(scan_file, number, f"the line is not UTF-8 text ({exc.reason})")
                yield number, None
                continue
            yield number, line.removesuffix("\n").removesuffix("\r")


def _csv_records(
    lines: Iterator[tuple[int, str | None]], plan: ScanPlan
) -> Iterator[tuple[int, list[str] | None]]:
    """csv records with the number of the line each starts on; empty lines are skipped."""
    numbers: list[int] = []

    def feed() -> Iterator[str]:
        for number, line in lines:
            if line is not None:
                numbers.append(number)
                yield line + "\n"

    reader = python_csv_reader(feed(), delimited_options(plan.spec))
    for fields in reader:
        start = numbers[0] if numbers else 0
        numbers.clear()
        if fields:
            yield start, fields


def _positions(
    plan: ScanPlan, decode: Decode, records: Iterator[tuple[int, list[str] | None]]
) -> list[int | None]:
    """Where each decoded column sits in a record: by header name, or by position."""
    if has_list_table(plan.spec):
        return []
    if plan.spec.has_header:
        header = next(records, (0, []))[1] or []
        present = {name.casefold(): index for index, name in enumerate(header)}
        return [present.get(f.name.casefold()) for f in decode.fields]
    order = {f.name.casefold(): index for index, f in enumerate(plan.table.data_fields)}
    return [order.get(f.name.casefold()) for f in decode.fields]
