"""A json record's values under the scan's names, and the fields the table does not keep.

Both json paths meet the name rule (``names``) here. On the row path a parsed record gives
each decoded column the value of its key, whatever the key's case; two keys of one
record that fold to one column and both hold a value make a bad record, or, with a
rescued-data column, the column keeps the value under its own spelling and the others
are rescued under their keys. On the columnar path pyarrow's batches carry each spelling
of a decoded column as a column of its own (the scanner folds them together); the fields
outside the table are rescued from the text of each record that has one, parsed by
``json.loads``, so a rescued value is the file's value exactly (an integer past 2^53
stays whole; pyarrow's inference loses leading nulls of lists, apache/arrow#51305).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from connect_plugin.errors import SchemaEvolutionError
from connect_plugin.scanning.files.files import ScanFile
from connect_plugin.scanning.formats.base import Decode
from connect_plugin.scanning.formats.converters import BadValue, Converter
from connect_plugin.scanning.formats.records import BadRecordSink, Row, place_text
from connect_plugin.scanning.formats.rescue import new_columns_message, rescued_text
from connect_plugin.scanning.names import duplicate_keys, fold

_WHITE_SPACE = b" \t\r\n"


def record_text(line: bytes) -> str:
    """A record's line as text for a reject, without its line break."""
    return line.decode("utf-8", errors="replace").rstrip("\r\n")


def convert_record(
    record: dict[str, Any],
    columns: Sequence[tuple[str, Converter]],
    scan_file: ScanFile,
    where: tuple[int, int | None],
    bad: BadRecordSink,
    decode: Decode,
    line: bytes,
) -> Row | None:
    """The raw row of one parsed record (None when ``on_error`` drops it).

    ``where`` is the record's line and, in arrays and documents, its byte offset.
    """
    keys: dict[str, list[str]] = {}
    wanted = decode.wanted
    rescue = decode.rescue is not None
    rescued: dict[str, Any] = {}
    for key in record:
        column = wanted.get(fold(key))
        if column is not None:
            keys.setdefault(column, []).append(key)
    values: list[Any] = []
    problem = None
    bad_column = None
    for name, convert in columns:
        given = [key for key in keys.get(name, ()) if record[key] is not None]
        if len(given) > 1:
            if not rescue:
                values.append(None)
                if problem is None:
                    problem, bad_column = duplicate_keys(name, given), name
                continue
            kept = [key for key in given if key == name]
            for key in given:
                if key not in kept:
                    rescued[key] = record[key]
            given = kept
        found = given[0] if given else None
        value = None if found is None else record[found]
        try:
            values.append(convert(value))
        except BadValue as exc:
            values.append(None)
            if rescue and found is not None:
                rescued[found] = value
            elif problem is None:
                problem, bad_column = f"column '{name}': expected {exc}", name
    if decode.watches_fields:
        new = leftover_values(record, decode)
        if new and decode.fail_on_new:
            place = place_text(*where)
            raise SchemaEvolutionError(
                new_columns_message(f"{scan_file.url}, {place},", list(new), "the scan's schema")
            )
        rescued.update(new)
    line_number, offset = where
    if problem is not None and not bad.keeps(
        scan_file, line_number, problem, record=record_text(line), offset=offset, column=bad_column
    ):
        return None
    if rescue:
        values.append(rescued_text(rescued, scan_file.url) if rescued else None)
    return tuple(values)


def leftover_values(record: dict[str, Any], decode: Decode) -> dict[str, Any]:
    """The fields of a record outside the table that hold a value, under their keys."""
    return {
        key: value
        for key, value in record.items()
        if value is not None and decode.leftover(key)
    }


class RecordTexts:
    """The records of a block of json lines, one per row pyarrow reads from it, split only
    when a row asks for its text."""

    def __init__(self, block: bytes, rows: int) -> None:
        self._block = block
        self._rows = rows
        self._texts: list[bytes] | None = None

    def rows(self, start: int) -> Callable[[int], bytes]:
        """The text of a row of the batch that starts at row ``start`` of the block."""
        return lambda row: self._all()[start + row]

    def _all(self) -> list[bytes]:
        if self._texts is None:
            self._texts = [line for line in self._block.split(b"\n") if line.strip(_WHITE_SPACE)]
            if len(self._texts) != self._rows:
                raise pa.ArrowInvalid("the block's records are not one per line")
        return self._texts


def with_leftovers(
    batch: pa.RecordBatch,
    width: int,
    decode: Decode,
    scan_file: ScanFile,
    text: Callable[[int], bytes],
) -> pa.RecordBatch:
    """The decoded keys of a batch (its first ``width`` columns), and the rescued column.

    pyarrow puts the keys it was not asked for after the asked-for ones; those the table
    has (columns not projected) are dropped. ``text`` gives a row's record, from which
    each row with a field outside the table is rescued.
    """
    names = batch.schema.names
    extras = [
        batch.column(index) for index in range(width, batch.num_columns)
        if decode.leftover(names[index])
    ]  # fmt: skip
    if decode.fail_on_new and extras:
        new = [name for name in names[width:] if decode.leftover(name)]
        where = f"{scan_file.url} (past its sample)"
        raise SchemaEvolutionError(new_columns_message(where, new, "the scan's schema"))
    if decode.rescue is None:
        return batch.select(range(width))
    arrays = batch.columns[:width]
    texts_out: list[str | None] = [None] * batch.num_rows
    if extras:
        present = pc.is_valid(extras[0])
        for extra in extras[1:]:
            present = pc.or_(present, pc.is_valid(extra))
        for row in pc.indices_nonzero(present).to_pylist():
            found = leftover_values(json.loads(text(row)), decode)
            texts_out[row] = rescued_text(found, scan_file.url) if found else None
    arrays.append(pa.array(texts_out, pa.string()))
    return pa.RecordBatch.from_arrays(arrays, names=[*names[:width], decode.rescue])
