"""What every file format of the scan offers, and the byte-level reading they share.

A format object is built once per spec (``ScanSpec.file_format``) from
its ``FormatSettings`` and holds the format's typed reader options. It
answers the four questions the scan asks of a file: its columns from a
bounded look (``sample``), its records as Arrow batches from pyarrow's own
readers (``native_batches``), the same records parsed one by one in Python
from a given record on (``row_records``), and its record count without
decoding a value (``count_rows``). Nothing outside ``formats`` asks which
format a scan has.

Formats are a wing under the planner: what a format is told is its
settings, the file, what to decode from it (``Decode``, which the scanner
makes from the plan) and, on the row path, a ``BadRecordSink``. So no
module of ``formats`` imports the spec, the options, the plan or the row
path, which all build on formats (a unit test holds them to that).
"""

from __future__ import annotations

import io
import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import pyarrow as pa

from connect_plugin.errors import InvalidScanSpec, UnreadableFile
from connect_plugin.scanning.choices import Compression
from connect_plugin.scanning.files.files import ScanFile
from connect_plugin.scanning.files.storage import Storage
from connect_plugin.scanning.formats.records import BadRecordSink, Row
from connect_plugin.scanning.names import fold

BLOCK_BYTES = 4 * 1024 * 1024
"""Bytes pyarrow parses at a time; a json line longer than this goes to the row path."""

HEAD_CHUNK = 64 * 1024
"""Bytes read at a time to finish the last line of a sample."""

STREAM_BUFFER = 64 * 1024
"""Read-ahead of a file stream, so that small reads (lines, headers) cost no call each."""

COMPRESSION_EXTENSIONS = {
    ".gz": Compression.GZIP,
    ".bz2": Compression.BZIP2,
    ".zst": Compression.ZSTD,
}
"""File name endings that ``compression="auto"`` reads as compressed."""

_CODECS = {Compression.GZIP: "gzip", Compression.BZIP2: "bz2", Compression.ZSTD: "zstd"}
"""pyarrow's codec name of each compression."""

COLUMNS = "columns"
"""The list column of a headerless delimited file, as Drill names it."""

STRING_LIST = pa.list_(pa.field("element", pa.string()))
"""The type of ``columns``: the fields of a line, in order."""

UTF8_MARK = b"\xef\xbb\xbf"
"""The byte order mark some tools write at the start of UTF-8 text; it is no part of the text."""

OTHER_MARKS = (
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian)"),
    (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)"),
    (b"\xff\xfe", "UTF-16 (little-endian)"),
    (b"\xfe\xff", "UTF-16 (big-endian)"),
)
"""Byte order marks of the encodings the scan does not read, longest first."""


@dataclass(frozen=True)
class FormatSettings:
    """The few settings of a scan that decide how a format opens and parses files.

    The spec makes them (``ScanSpec.format_settings``) for the format it
    builds; a format reads nothing else of the spec, so it can neither
    depend on the projection or policies nor import what is built on it.
    """

    storage: Storage
    """The file system the scan's files are opened on."""
    options: Mapping[str, str]
    """The format's reader options, their names folded (``FileFormat.check_options``)."""
    compression: Compression
    """How whole files are compressed; ``auto`` goes by each file's name."""
    sample_bytes: int
    """Bytes read from the start of a file to learn its columns."""
    max_rows: int
    """Rows a batch may hold, which readers that batch by rows (parquet) ask for."""
    has_schema: bool
    """Whether the scan provides a schema, which names a headerless file's fields by position
    (without one they form Drill's ``columns`` list)."""

    def option(self, name: str, default: str | None = None) -> str | None:
        """A reader option by any spelling of its name, or ``default`` when it is not set."""
        return self.options.get(name.lower(), default)


@dataclass(frozen=True)
class FileSample:
    """A file's top-level columns as the file spells them, in the file's order.

    ``conflicts`` maps a folded column name to the message describing a type
    change inside the file; whether it is an error depends on the provided
    schema and the projection, so the sample only reports it.
    """

    fields: tuple[pa.Field, ...]
    conflicts: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Decode:
    """What to decode from each file: table columns with read types, and list elements.

    ``elements`` are the ``columns[n]`` a headerless file should deliver as
    ``columns[n]`` string columns; ``whole_list`` asks for ``columns`` itself.
    ``rescue`` names the raw string column of rescued values (None: no
    rescue); ``positions`` maps the folded name of every table column to its
    place among the table's columns, so a reader knows which of a file's
    fields the table does not keep (with ``fail_on_new`` such a field is an
    error) and where a headerless file read by a provided schema has each
    column. A format hands up a decoded column under every key of the file
    that folds to its name (``names``), spelled as the file spells it. The
    scanner makes a ``Decode`` from the plan, so that a format needs
    nothing of the plan itself.
    """

    fields: tuple[pa.Field, ...]
    elements: tuple[int, ...] = ()
    whole_list: bool = False
    rescue: str | None = None
    positions: Mapping[str, int] = field(default_factory=dict)
    fail_on_new: bool = False

    @property
    def is_empty(self) -> bool:
        return not self.fields and not self.elements and not self.whole_list and not self.rescue

    @property
    def watches_fields(self) -> bool:
        """Whether fields outside the table matter (rescued, or an error)."""
        return self.rescue is not None or self.fail_on_new

    def leftover(self, name: str) -> bool:
        """Whether a field of a file is outside the table."""
        return fold(name) not in self.positions

    @property
    def wanted(self) -> dict[str, str]:
        """The decoded columns by folded name: the columns a file's keys may fold to."""
        return {fold(f.name): f.name for f in self.fields}

    @property
    def raw_fields(self) -> list[pa.Field]:
        """The columns of a raw batch: decoded fields, then split elements, then the list."""
        fields = [pa.field(f.name, f.type) for f in self.fields]
        fields += [pa.field(f"{COLUMNS}[{index}]", pa.string()) for index in self.elements]
        if self.whole_list:
            fields.append(pa.field(COLUMNS, STRING_LIST))
        if self.rescue is not None:
            fields.append(pa.field(self.rescue, pa.string()))
        return fields


class FileFormat:
    """One file format of the scan, with the reader options of one spec."""

    name: ClassVar[str]
    """The format's own name, under which the registry (``formats.FORMAT_CLASSES``) lists it."""
    option_names: ClassVar[frozenset[str]] = frozenset()
    has_row_path: ClassVar[bool] = True
    """Whether records pyarrow refuses can be read again one by one (not parquet)."""
    block_bytes: ClassVar[int] = BLOCK_BYTES
    compressible: ClassVar[bool] = True
    """Whether whole files may be compressed (not parquet, which compresses inside)."""
    records_can_be_bad: ClassVar[bool] = False
    """Whether a record can fail to be one at all (a json scalar is no object), so that a
    wildcard that finds no columns must still read the records to judge them, not count them."""

    def __init__(self, settings: FormatSettings) -> None:
        self.settings = settings
        self._marks: dict[str, bytes] = {}

    @classmethod
    def check_options(cls, options: Mapping[str, str]) -> dict[str, str]:
        """The reader options with folded names, or an error naming the first bad one."""
        result = {}
        for key, value in options.items():
            name = key.lower()
            if name not in cls.option_names:
                known = ", ".join(sorted(cls.option_names)) or "none"
                raise InvalidScanSpec(
                    f"option '{key}' is not an option of the {cls.name} format (options: {known})"
                )
            result[name] = cls.check_option(key, name, value)
        return result

    @classmethod
    def check_option(cls, key: str, name: str, value: str) -> str:
        return value

    @property
    def has_header(self) -> bool:
        """Whether files start with a line naming their columns (csv/tsv with header=true)."""
        return False

    @property
    def headerless(self) -> bool:
        """Whether the file's own fields have no names (headerless csv/tsv, and text)."""
        return False

    @property
    def list_table(self) -> bool:
        """Whether the table is Drill's single ``columns`` list (headerless, no provided schema)."""
        return self.headerless and not self.settings.has_schema

    def codec(self, scan_file: ScanFile) -> str | None:
        """pyarrow's codec for the file: the scan's compression, or its name's ending."""
        compression = self.settings.compression
        if compression is Compression.AUTO:
            ending = posixpath.splitext(scan_file.path)[1].lower()
            compression = COMPRESSION_EXTENSIONS.get(ending, Compression.NONE)
        return _CODECS.get(compression)

    def open(self, scan_file: ScanFile) -> pa.NativeFile:
        """A buffered stream of the file's text from its start, decompressed, without a
        UTF-8 byte order mark (``UnreadableFile`` for a mark of another encoding)."""
        mark = self._marks.get(scan_file.path)
        if mark is None:
            with self._open_bytes(scan_file) as handle:
                mark = byte_order_mark(handle.read(len(OTHER_MARKS[0][0])), scan_file)
            self._marks[scan_file.path] = mark
        stream = self._open_bytes(scan_file)
        if mark:
            stream.read(len(mark))
        return stream

    def _open_bytes(self, scan_file: ScanFile) -> pa.NativeFile:
        """A buffered stream of the file's bytes from its start, decompressed."""
        filesystem = self.settings.storage.filesystem
        stream = filesystem.open_input_stream(scan_file.path, compression=None)
        codec = self.codec(scan_file)
        if codec is not None:
            stream = pa.CompressedInputStream(stream, codec)
        return pa.BufferedInputStream(stream, STREAM_BUFFER)

    def is_empty(self, scan_file: ScanFile) -> bool:
        """Whether the file has no bytes (after decompression, which only its start tells)."""
        if self.codec(scan_file) is None:
            return scan_file.size == 0
        with self.open(scan_file) as handle:
            return not handle.read(1)

    def read_head(self, scan_file: ScanFile, limit: int) -> tuple[bytes, bool]:
        """The first ``limit`` bytes cut after the last whole line, and whether that is all.

        A first line longer than ``limit`` is read to its end, so a sample
        always holds at least one whole record.
        """
        with self.open(scan_file) as handle:
            data = handle.read(limit)
            if len(data) < limit:
                return data, True
            cut = data.rfind(b"\n")
            while cut < 0:
                more = handle.read(HEAD_CHUNK)
                if not more:
                    return data, True
                found = more.find(b"\n")
                if found >= 0:
                    return data + more[: found + 1], False
                data += more
            return data[: cut + 1], False

    def line_blocks(self, scan_file: ScanFile) -> Iterator[bytes]:
        """The file in blocks of whole lines (the last one may lack its line break)."""
        pending = b""
        with self.open(scan_file) as handle:
            while True:
                chunk = handle.read(self.block_bytes)
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

    def lines(self, scan_file: ScanFile) -> Iterator[bytes]:
        """The file's lines with their line breaks, for the row path."""
        with io.BufferedReader(self.open(scan_file)) as handle:
            yield from handle

    def sample(self, scan_file: ScanFile) -> FileSample:
        """The file's columns from a bounded look at it."""
        raise NotImplementedError

    def native_batches(self, scan_file: ScanFile, decode: Decode) -> Iterator[pa.RecordBatch]:
        """Raw batches of one file from pyarrow's reader; pyarrow's errors pass through."""
        raise NotImplementedError

    def row_records(
        self, scan_file: ScanFile, decode: Decode, skip: int, bad: BadRecordSink
    ) -> Iterator[Row]:
        """Raw rows of a file from record ``skip`` on (counting from 0), parsed in Python."""
        raise NotImplementedError

    def count_rows(self, scan_file: ScanFile) -> Iterator[int]:
        """Record counts of one file, in pieces, without decoding a value."""
        raise NotImplementedError

    def exact_count(self, scan_file: ScanFile, decode: Decode) -> int | None:
        """The file's row count when reading ``decode`` from it cannot fail or drop a record,
        known without decoding; None when only reading tells."""
        return None


def byte_order_mark(head: bytes, scan_file: ScanFile) -> bytes:
    """The UTF-8 byte order mark a file's head starts with (or b''); an error for another's.

    The scan reads UTF-8 text, as Spark's readers do by default: a file whose mark says
    UTF-16 or UTF-32 would read as garbage, so it is refused whatever ``on_error`` says.
    """
    if head.startswith(UTF8_MARK):
        return UTF8_MARK
    for mark, encoding in OTHER_MARKS:
        if head.startswith(mark):
            raise UnreadableFile(
                f"file {scan_file.url} is {encoding} text (its byte order mark says so); the "
                "scan reads UTF-8 text: convert the file to UTF-8 (iconv -f UTF-16 -t UTF-8)"
            )
    return b""
