"""The row path: records pyarrow's readers refused, read one by one through the loader.

A json file whose field changes type mid-file, a csv file with ragged rows
or a value its column type does not parse: the scanner hands the rest of
such a file here, from the first record the columnar path did not deliver.
The file's format parses each record in Python and converts each value by
the rules in ``converters``; the rows are written through a
``ResultSetLoader``, which keeps every batch within the scan's row and byte
limits.

A record that cannot be read at all (malformed json, not an object) or a
value that does not convert is a bad record, and ``BadRecords`` applies the
scan's ``on_error`` policy: ``fail`` raises naming the file, the line and
the column; ``skip`` drops the record; ``null`` keeps it with the bad
values (or, for an unreadable record, every value) null; ``reject``
drops it as ``skip`` does. Each record it skips, nulls or rejects also
goes, as a ``Reject``, to the reader's ``RejectSink`` if it has one: the
place a rejects table (DuckDB's ``reject_errors``) is written from.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa

from connect_plugin.errors import BadRecord
from connect_plugin.scanning.choices import OnError
from connect_plugin.scanning.files.files import ScanFile
from connect_plugin.scanning.formats import Decode
from connect_plugin.scanning.formats.records import Reject, RejectKind, RejectSink, Row
from connect_plugin.scanning.loader.loader import ResultSetLoader
from connect_plugin.scanning.planning.plan import ScanPlan

log = logging.getLogger(__name__)

_ACTIONS = {
    OnError.SKIP: "skipped",
    OnError.NULL: "kept with null values",
    OnError.REJECT: "skipped into the rejects table",
}


class BadRecords:
    """Applies ``on_error`` to bad records and counts the ones it skipped or nulled.

    It is the ``BadRecordSink`` a format reports to on the row path, and the
    scanner's own for parquet values that do not cast.
    """

    def __init__(self, on_error: OnError, sink: RejectSink | None = None) -> None:
        self.on_error = on_error
        self.sink = sink
        self.count = 0
        self._per_file: dict[str, tuple[int, str]] = {}

    def report(
        self,
        scan_file: ScanFile,
        line: int,
        reason: str,
        unit: str = "line",
        record: str | None = None,
        offset: int | None = None,
        *,
        kind: RejectKind,
        column: str | None = None,
    ) -> None:
        """Record one bad record (at a line, or a row for parquet); ``fail`` raises ``BadRecord``."""
        reject = Reject(scan_file.url, line, reason, unit, record, offset, kind, column)
        if self.on_error is OnError.FAIL:
            raise BadRecord(
                f"file {scan_file.url}, {reject.place}: {reason}; fix the record, or scan with "
                "on_error='skip' to drop bad records, on_error='null' to null bad values or "
                "on_error='reject' to keep them in a rejects table"
            )
        self.count += 1
        seen, first = self._per_file.get(scan_file.path, (0, f"{reject.place}: {reason}"))
        self._per_file[scan_file.path] = (seen + 1, first)
        if self.sink is not None:
            self.sink.write(reject)

    def keeps(
        self,
        scan_file: ScanFile,
        line: int,
        reason: str,
        unit: str = "line",
        record: str | None = None,
        offset: int | None = None,
        column: str | None = None,
    ) -> bool:
        """Report a record with bad values; whether it stays, with those values null."""
        self.report(
            scan_file, line, reason, unit, record, offset, kind=RejectKind.CAST, column=column
        )
        return self.on_error is OnError.NULL

    def unreadable(
        self,
        scan_file: ScanFile,
        line: int,
        reason: str,
        record: str | None = None,
        offset: int | None = None,
    ) -> bool:
        """Report a record that could not be read at all; whether a row of nulls stands in."""
        self.report(
            scan_file, line, reason, record=record, offset=offset, kind=RejectKind.MALFORMED_RECORD
        )
        return self.keeps_unreadable()

    def keeps_unreadable(self) -> bool:
        """Whether an unreadable record, already reported, leaves a row of nulls."""
        return self.on_error is OnError.NULL

    def finish_file(self, scan_file: ScanFile) -> None:
        """Log how many bad records the file had, once per file."""
        seen = self._per_file.pop(scan_file.path, None)
        if seen is not None:
            log.warning(
                "file %s: %d bad record(s) %s (first at %s)",
                scan_file.url,
                seen[0],
                _ACTIONS[self.on_error],
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
    records = plan.spec.file_format.row_records(scan_file, decode, skip, bad)
    loader = ResultSetLoader(
        pa.schema(decode.raw_fields), max_rows=plan.spec.max_rows, max_bytes=plan.spec.max_bytes
    )
    with loader:
        loader.start_batch()
        pending: list[Row] = []
        for row in records:
            pending.append(row)
            if len(pending) >= plan.spec.max_rows:
                yield from _write(loader, pending)
                pending = []
        yield from _write(loader, pending)
        if loader.row_count or loader.has_lookahead:
            yield loader.harvest()
            if loader.has_lookahead:
                loader.start_batch()
                yield loader.harvest()


def _write(loader: ResultSetLoader, rows: list[Row]) -> Iterator[pa.RecordBatch]:
    start = 0
    while start < len(rows):
        start += loader.writer.write_rows(rows, start)
        if loader.writer.is_full():
            yield loader.harvest()
            loader.start_batch()
