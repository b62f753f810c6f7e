"""The records ``on_error="reject"`` drops, written where the rejects table reads them.

Spark's workers read the files of a scan in many partitions at once, and a
task may run again (a retry, a speculative copy), stop half way (a
``limit``), or read the same file as another task of the same query (a
scan used twice in one query: a union, a self-join). So each source file's
rejects go to a parquet file of their own,
``<rejects_folder>/<scan_id>-<sha256 of the file's URL>.parquet``, written
under a temporary name in the folder's hidden ``.writing`` folder and
renamed into place once the source file was read to its end: a task that
stops early writes nothing, and one that reads the file again replaces the
same file with the same rows, so each bad record is there once. Spark never
sees a temporary file: it skips hidden folders, whose own entry never goes
away while it lists the table (a temporary file listed and then renamed
fails the listing). The files are private (0600), as every file of the temp
workspace is.

Each file read is written again, so the files a query wrote are those new
or replaced since a snapshot taken before it (``snapshot``,
``rows_written_since``): their footers say how many records it rejected.
After a query, the rejects of other scans that it did not see written are
deleted (``delete_other_scans``).
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from connect_plugin.errors import ScanError
from connect_plugin.scanning.files.files import ScanFile
from connect_plugin.scanning.formats.records import Reject
from connect_plugin.scanning.reading.scanner import ScanReader
from connect_plugin.scanning.request.spec import ScanSpec

REJECTS_SCHEMA = pa.schema(
    [
        ("file", pa.string()),
        ("line", pa.int64()),
        ("byte_offset", pa.int64()),
        ("column_name", pa.string()),
        ("error_type", pa.string()),
        ("error_message", pa.string()),
        ("raw_record", pa.string()),
    ]
)
"""The rejects table's columns (DuckDB's ``reject_errors`` has the same ideas, by these names)."""

_FILE_MODE = 0o600
_FOLDER_MODE = 0o700

WRITING_FOLDER = ".writing"
"""The folder, inside the rejects folder, where rejects files are written before they are
renamed into place."""

_REJECTS_FILE = re.compile(r"^([0-9a-f]{32})-[0-9a-f]{32}\.parquet$")
"""A rejects file's name: the scan's id, the digest of its source file's URL."""

Snapshot = dict[str, tuple[int, int, int]]
"""The rejects files in a folder: name to (inode, size, modification time in ns)."""


def snapshot(folder: str) -> Snapshot:
    """The rejects files in ``folder`` now (of every scan; Spark's own files left out)."""
    found: Snapshot = {}
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return found
    for entry in entries:
        if _REJECTS_FILE.match(entry.name):
            try:
                stat = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            found[entry.name] = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    return found


def delete_other_scans(folder: str, scan_ids: frozenset[str], before: Snapshot) -> int:
    """Delete the rejects files in ``folder`` of scans not in ``scan_ids`` that are as they
    were at ``before`` (a file written since is another reader's, kept); how many."""
    deleted = 0
    for name, state in snapshot(folder).items():
        match = _REJECTS_FILE.match(name)
        if match is None or match.group(1) in scan_ids or before.get(name) != state:
            continue
        try:
            os.remove(os.path.join(folder, name))
        except FileNotFoundError:
            continue
        deleted += 1
    return deleted


def rows_written_since(folder: str, before: Snapshot) -> int:
    """Records rejected into ``folder`` by the reads since ``before``: rows of the files that
    are new or were replaced since then, from their parquet footers."""
    rows = 0
    for name, state in snapshot(folder).items():
        if before.get(name) == state:
            continue
        try:
            rows += pq.read_metadata(os.path.join(folder, name)).num_rows
        except (FileNotFoundError, pa.ArrowInvalid):
            continue
    return rows


class RejectFiles:
    """A ``RejectSink`` that keeps one source file's rejects and writes them once it is read."""

    def __init__(self, folder: str, scan_id: str, table: str = "") -> None:
        self.folder = folder
        self.scan_id = scan_id
        self.table = table
        self._rejects: list[Reject] = []

    @classmethod
    def of(cls, spec: ScanSpec) -> RejectFiles | None:
        """The sink of a spec the gateway gave a rejects folder; None for any other scan."""
        if spec.rejects_folder is None:
            return None
        return cls(spec.rejects_folder, spec.scan_id, spec.rejects_table or "")

    def write(self, reject: Reject) -> None:
        self._rejects.append(reject)

    def read(self, reader: ScanReader, files: Iterable[ScanFile]) -> Iterator[pa.RecordBatch]:
        """The reader's batches of ``files``; each file read to its end has its rejects written.

        A read that only counts records judges none, so it writes nothing
        and leaves the rejects of earlier reads of the scan as they are.
        """
        for scan_file in files:
            self._rejects = []
            yield from reader.read_file(scan_file)
            if not reader.counts_only:
                self.finish(scan_file.url)

    def path_of(self, url: str) -> str:
        digest = hashlib.sha256(url.encode()).hexdigest()[:32]
        return os.path.join(self.folder, f"{self.scan_id}-{digest}.parquet")

    def finish(self, url: str) -> None:
        """Write the rejects of the file at ``url`` (none: an empty file replaces older rows)."""
        rejects, self._rejects = self._rejects, []
        table = pa.table(
            {
                "file": [r.file for r in rejects],
                "line": [r.line for r in rejects],
                "byte_offset": [r.offset for r in rejects],
                "column_name": [r.column for r in rejects],
                "error_type": [str(r.kind) for r in rejects],
                "error_message": [r.reason for r in rejects],
                "raw_record": [r.record for r in rejects],
            },
            schema=REJECTS_SCHEMA,
        )
        final = self.path_of(url)
        writing = self._writing_folder()
        temporary = os.path.join(writing, f".{os.path.basename(final)}.{uuid.uuid4().hex}")
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _FILE_MODE)
            try:
                with os.fdopen(descriptor, "wb") as sink:
                    pq.write_table(table, sink)
                os.replace(temporary, final)
            except BaseException:
                if os.path.exists(temporary):
                    os.remove(temporary)
                raise
        except OSError as exc:
            raise ScanError(
                f"cannot write the rejects of file {url} into the rejects table "
                f"[{self.table}] (folder {self.folder}): {exc}"
            ) from exc

    def _writing_folder(self) -> str:
        """The folder temporary files are written in, made on first use (never the rejects
        folder itself: one that is gone belongs to a table dropped or replaced since the scan
        was planned)."""
        writing = os.path.join(self.folder, WRITING_FOLDER)
        try:
            os.mkdir(writing, _FOLDER_MODE)
        except FileExistsError:
            pass
        except FileNotFoundError:
            raise ScanError(
                f"the rejects table [{self.table}] of this scan no longer exists (it was dropped "
                f"or replaced since the scan was planned; its folder {self.folder} is gone), so "
                "the records the scan rejects have nowhere to go; run the scan again, or create "
                "its view again, to have the table made"
            ) from None
        return writing
