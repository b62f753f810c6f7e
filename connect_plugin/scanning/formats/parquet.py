"""Parquet: columns by name from the file's own schema, counts from its footer.

Parquet has no row path: its values are typed already, and a value that
does not cast to the scan's type is handled in place by the scanner, row by
row, for the one batch it sits in.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from connect_plugin.errors import SchemaEvolutionError
from connect_plugin.scanning.files.files import ScanFile
from connect_plugin.scanning.formats.base import Decode, FileFormat, FileSample
from connect_plugin.scanning.formats.rescue import new_columns_message, rescued_array
from connect_plugin.scanning.formats.widening import normalize_type
from connect_plugin.scanning.names import KeyGroups

INT96_UNIT = "us"
"""The unit INT96 timestamps (Spark's default for TIMESTAMP) are read in: Spark's own.
pyarrow's default, nanoseconds, overflows outside 1677-09-21 to 2262-04-11, where
the scan failed on the values Spark wrote."""


class ParquetFormat(FileFormat):
    name = "parquet"
    has_row_path = False
    compressible = False

    def open(self, scan_file: ScanFile) -> pa.NativeFile:
        """Parquet reads its footer first, so its files are opened for random access.

        Local files are memory-mapped: parquet reads column chunks, not the
        whole file, and the mapping saves a copy of each.
        """
        if self.settings.storage.is_local:
            return pa.memory_map(scan_file.path)
        return self.settings.storage.filesystem.open_input_file(scan_file.path)

    def sample(self, scan_file: ScanFile) -> FileSample:
        with self.open(scan_file) as handle:
            schema = pq.ParquetFile(handle, coerce_int96_timestamp_unit=INT96_UNIT).schema_arrow
        return FileSample(tuple(f.with_type(normalize_type(f.type)) for f in schema))

    def native_batches(self, scan_file: ScanFile, decode: Decode) -> Iterator[pa.RecordBatch]:
        """The file's columns that fold to a decoded column (``names``), as the file spells
        them, and the rescued column of the others."""
        with self.open(scan_file) as handle:
            parquet = pq.ParquetFile(handle, coerce_int96_timestamp_unit=INT96_UNIT)
            file_names = parquet.schema_arrow.names
            chosen = KeyGroups(decode.wanted, file_names).keys()
            leftovers: list[str] = []
            if decode.watches_fields:
                leftovers = [name for name in file_names if decode.leftover(name)]
                if decode.fail_on_new and leftovers:
                    raise SchemaEvolutionError(
                        new_columns_message(scan_file.url, leftovers, "the scan's schema")
                    )
            width = len(chosen)
            for batch in parquet.iter_batches(
                batch_size=self.settings.max_rows,
                columns=chosen + leftovers,
                use_threads=False,
            ):
                if decode.rescue is None:
                    yield batch.select(range(width))
                    continue
                extras = [(name, batch.column(width + i)) for i, name in enumerate(leftovers)]
                arrays = [
                    *batch.columns[:width],
                    rescued_array(extras, batch.num_rows, scan_file.url),
                ]
                yield pa.RecordBatch.from_arrays(arrays, names=[*chosen, decode.rescue])

    def count_rows(self, scan_file: ScanFile) -> Iterator[int]:
        with self.open(scan_file) as handle:
            yield pq.ParquetFile(handle).metadata.num_rows

    def exact_count(self, scan_file: ScanFile, decode: Decode) -> int | None:
        """The footer's count, when every decoded column converts without fail.

        A column converts without fail when the file has it in the read type
        already or in a type that widens to it (a smaller integer, a float to
        double); any other type may hold a value that does not convert, a bad
        record, and a column the file spells twice (``A`` and ``a``) may get two
        values in a row, so only reading counts.
        """
        with self.open(scan_file) as handle:
            parquet = pq.ParquetFile(handle, coerce_int96_timestamp_unit=INT96_UNIT)
            schema = parquet.schema_arrow
            if decode.fail_on_new and any(decode.leftover(name) for name in schema.names):
                return None
            groups = KeyGroups(decode.wanted, schema.names)
            for wanted in decode.fields:
                keys = groups.of(wanted.name)
                if len(keys) > 1:
                    return None
                for key in keys:
                    if not _widens(normalize_type(schema.field(key).type), wanted.type):
                        return None
            count: int = parquet.metadata.num_rows
            return count


def _widens(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether every value of ``source`` casts to ``target`` without error."""
    types = pa.types
    if source == target:
        return True
    if types.is_integer(source) and types.is_int64(target):
        return bool(types.is_signed_integer(source) or source.bit_width < 64)
    if types.is_float64(target):
        return bool(types.is_integer(source) or types.is_floating(source))
    return False
