"""The words a format and the row path share for records: rows, bad records, and where they are.

A format parses a file's records into ``Row`` tuples and reports each one
it cannot give as it is to a ``BadRecordSink``, saying what was wrong
(``RejectKind``) and where (``place_text``). Behind that sink the row path
(``rowpath.BadRecords``) applies the scan's ``on_error`` policy and hands
each record it skips, nulls or rejects, as a ``Reject``, to the scan's
``RejectSink``. Both sides take these words from here, so a format needs
nothing of the planner or the row path, and they nothing of a format's
module but what the format registry gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from connect_plugin.scanning.files.files import ScanFile

Row = tuple[Any, ...]
"""One record's raw values, in the order of the raw batch's columns (``Decode.raw_fields``)."""


class RejectKind(str, Enum):
    """What was wrong with a rejected record: the ``error_type`` column of a rejects table."""

    CAST = "CAST"
    """A value that does not convert to its column's type."""
    MALFORMED_RECORD = "MALFORMED RECORD"
    """A record that is no record of the format (broken json, a json scalar)."""
    INVALID_ENCODING = "INVALID ENCODING"
    """A line that is not UTF-8 text (DuckDB's INVALID UNICODE)."""

    def __str__(self) -> str:
        return str(self.value)


def place_text(line: int, offset: int | None = None, unit: str = "line") -> str:
    """Where a record is, for messages: ``line 3``, or ``line 1 (byte offset 5120)``."""
    where = f"{unit} {line}"
    return where if offset is None else f"{where} (byte offset {offset})"


@dataclass(frozen=True)
class Reject:
    """One record ``on_error`` skipped or nulled: where it is, what was wrong, its text."""

    file: str
    """The file's URL."""
    line: int
    """The record's line (its row for parquet), counting from 1."""
    reason: str
    unit: str = "line"
    record: str | None = None
    """The record's text (a csv record's fields joined by its delimiter), where the reader has it."""
    offset: int | None = None
    """The record's first byte in the file, where lines say too little (json arrays, documents)."""
    kind: RejectKind = RejectKind.CAST
    column: str | None = None
    """The column whose value did not convert (CAST); None when the whole record is bad."""

    @property
    def place(self) -> str:
        return place_text(self.line, self.offset, self.unit)


class RejectSink(Protocol):
    """Where the rejected records of a scan go (a rejects table, a test's list)."""

    def write(self, reject: Reject) -> None: ...


class BadRecordSink(Protocol):
    """Where a format reports the records it cannot give as they are.

    The format only says what is wrong and where; whether that fails the
    scan, drops the record or keeps it with null values is the scan's
    ``on_error``, which the sink applies, and its answers tell the format
    whether to yield the record.
    """

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
        """Report one bad record (at a line, or a row for parquet); it may raise to fail the scan."""
        ...

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
        ...

    def unreadable(
        self,
        scan_file: ScanFile,
        line: int,
        reason: str,
        record: str | None = None,
        offset: int | None = None,
    ) -> bool:
        """Report a record that could not be read at all; whether a row of nulls stands in."""
        ...

    def keeps_unreadable(self) -> bool:
        """Whether an unreadable record, already reported, leaves a row of nulls."""
        ...
