"""Reading a planned scan: batches of the output schema, file after file.

For each file the scanner takes the columnar path (the format's pyarrow reader) and conforms
its batches (``conform``); when pyarrow refuses the file part-way, or a
value does not cast to its column's type, the rest of the file, from the
first record not yet delivered, goes through the row path (``rowpath``),
which applies the ``on_error`` policy record by record. Parquet has no row
path: a value that does not cast is handled in place, row by row, for the
one batch it sits in. An empty table projection (``columns=[]``, or only
implicit columns) decodes nothing and counts records instead; json files
whose projected columns are all missing are still read, to judge each record.

Every batch passes ``limit_batches`` on its way out, so none has more rows
than ``max_rows`` or more bytes than ``max_bytes``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from connect_plugin.errors import UnreadableFile
from connect_plugin.scanning.choices import Evolution, OnError
from connect_plugin.scanning.files.files import ScanFile
from connect_plugin.scanning.formats import COLUMNS, Decode
from connect_plugin.scanning.formats.records import RejectSink
from connect_plugin.scanning.formats.rescue import rescued_text, without_file
from connect_plugin.scanning.names import DuplicateKeys, fold
from connect_plugin.scanning.planning.plan import ScanPlan
from connect_plugin.scanning.planning.projection import Kind
from connect_plugin.scanning.reading.conform import (
    Conformer,
    ConversionFailed,
    limit_batches,
    rows_only,
)
from connect_plugin.scanning.reading.rowpath import BadRecords, row_batches

log = logging.getLogger(__name__)


class ScanReader:
    """Reads the files of a plan into batches of its output schema.

    ``target`` is an output schema with the same names and other Arrow
    types (the ones Spark reads back); values are cast to it directly.
    ``bad_records`` counts the records ``on_error="skip"`` dropped or
    ``on_error="null"`` kept with null values; ``rejects`` receives each of
    them as a ``Reject``.
    """

    def __init__(
        self, plan: ScanPlan, target: pa.Schema | None = None, rejects: RejectSink | None = None
    ) -> None:
        self.plan = plan
        self.conformer = Conformer(plan, target)
        self.schema = self.conformer.schema
        self.decode = _decode(plan, self.schema)
        self._bad = BadRecords(plan.spec.on_error, rejects)
        self.format = plan.spec.file_format

    @property
    def counts_only(self) -> bool:
        """Whether records are counted, not read: nothing to decode, and nothing to judge.

        Where a record can fail to be one at all (malformed json, a json scalar), the
        records are read even when no column is decoded (``columns=[]``, or file and
        partition columns alone), so that a count judges them as reading the data
        columns does: a bad record fails under ``on_error="fail"`` and is dropped
        under ``"skip"`` whatever the projection. Under ``"null"`` every record is a
        row, bad or not, so there is nothing to judge.
        """
        if not self.decode.is_empty:
            return False
        return not self.format.records_can_be_bad or self.plan.spec.on_error is OnError.NULL

    @property
    def bad_records(self) -> int:
        return self._bad.count

    def read(self, files: Iterable[ScanFile] | None = None) -> Iterator[pa.RecordBatch]:
        """Batches of the given files (all the plan's files by default), in order."""
        for scan_file in self.plan.files if files is None else files:
            yield from self.read_file(scan_file)

    def read_table(self, files: Iterable[ScanFile] | None = None) -> pa.Table:
        return pa.Table.from_batches(list(self.read(files)), schema=self.schema)

    def count_file(self, scan_file: ScanFile) -> int:
        """The number of rows ``read_file`` gives for the file, or the error it raises.

        The file is read unless the number is certain without decoding: a
        projection of no data columns counts records, and a format may know
        its count from metadata when nothing it holds can fail to convert
        (``exact_count``).
        """
        if not self.counts_only:
            exact = self.format.exact_count(scan_file, self.decode)
            if exact is not None:
                return exact
        return sum(batch.num_rows for batch in self.read_file(scan_file))

    def read_file(self, scan_file: ScanFile) -> Iterator[pa.RecordBatch]:
        where = f"file {scan_file.url}"
        spec = self.plan.spec
        rows = 0
        try:
            for batch in self._file_batches(scan_file):
                yield from limit_batches(batch, spec.max_rows, spec.max_bytes, where, rows)
                rows += batch.num_rows
        except OSError as exc:
            raise UnreadableFile(f"cannot read {where}: {exc}") from exc
        finally:
            self._bad.finish_file(scan_file)

    def _file_batches(self, scan_file: ScanFile) -> Iterator[pa.RecordBatch]:
        constants = self.conformer.constants(scan_file)
        conform = self.conformer.conform
        in_place = not self.format.has_row_path
        delivered = 0
        try:
            if self.counts_only:
                for count in self.format.count_rows(scan_file):
                    yield conform(rows_only(count), constants)
                    delivered += count
                return
            for raw in self.format.native_batches(scan_file, self.decode):
                if in_place:
                    batch = self._conform_in_place(raw, constants, scan_file, delivered)
                else:
                    batch = conform(raw, constants)
                yield batch
                delivered += raw.num_rows
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ConversionFailed) as exc:
            if in_place:
                raise UnreadableFile(f"cannot read file {scan_file.url}: {exc}") from exc
            log.info(
                "file %s: the columnar reader stopped at record %d (%s); reading on row by row",
                scan_file.url,
                delivered + 1,
                exc,
            )
            try:
                for raw in row_batches(self.plan, scan_file, self.decode, delivered, self._bad):
                    yield conform(raw, constants)
            except ConversionFailed as failure:
                raise UnreadableFile(f"cannot read file {scan_file.url}: {failure}") from failure

    def _conform_in_place(
        self, raw: pa.RecordBatch, constants: Sequence[Any], scan_file: ScanFile, first: int
    ) -> pa.RecordBatch:
        """Conform a batch; where a value does not cast, apply ``on_error`` row by row."""
        try:
            return self.conformer.conform(raw, constants)
        except ConversionFailed:
            pass
        kept = []
        for offset in range(raw.num_rows):
            row = raw.slice(offset, 1)
            while True:
                try:
                    kept.append(self.conformer.conform(row, constants))
                    break
                except ConversionFailed as exc:
                    if self.decode.rescue is not None:
                        row = self._rescued(row, exc, scan_file)
                        continue
                    if not self._bad.keeps(
                        scan_file, first + offset + 1, str(exc), unit="row", column=exc.column
                    ):
                        break
                    row = self._without(row, exc.column)
        if not kept:
            return self.conformer.conform(raw.slice(0, 0), constants)
        return pa.Table.from_batches(kept, schema=self.schema).combine_chunks().to_batches()[0]

    def _keys(self, row: pa.RecordBatch, output_name: str) -> tuple[str, list[int]]:
        """The table column behind an output column, and its keys among the row's columns."""
        source = next(c.source for c in self.plan.columns if c.name == output_name)
        return source, self.conformer.key_indices(row, source)

    def _without(
        self, row: pa.RecordBatch, output_name: str, keep: str | None = None
    ) -> pa.RecordBatch:
        """The row with the keys behind an output column set to null (but one, ``keep``)."""
        _, indices = self._keys(row, output_name)
        for index in indices:
            found = row.schema.field(index)
            if found.name != keep:
                row = row.set_column(index, found, pa.nulls(1, found.type))
        return row

    def _rescued(self, row: pa.RecordBatch, failed: ConversionFailed, scan_file: ScanFile) -> pa.RecordBatch:
        """The row with what did not fit moved into its rescued-data column, under its key:
        the value that did not cast, or the values of the keys but the column's own
        spelling when several give it one."""
        assert self.decode.rescue is not None
        source, indices = self._keys(row, failed.column)
        keep = source if isinstance(failed.error, DuplicateKeys) else None
        index = row.schema.get_field_index(self.decode.rescue)
        values = without_file(row.column(index)[0].as_py())
        for key_index in indices:
            key = row.schema.names[key_index]
            value = row.column(key_index)[0].as_py()
            if key != keep and value is not None:
                values[key] = value
        rescued = pa.array([rescued_text(values, scan_file.url)], pa.string())
        row = self._without(row, failed.column, keep)
        return row.set_column(index, row.schema.field(index), rescued)


def _decode(plan: ScanPlan, target: pa.Schema) -> Decode:
    """The raw columns to decode: table columns in their output type where one output has it."""
    read_types: dict[str, pa.DataType] = {}
    for column, target_field in zip(plan.columns, target, strict=True):
        if column.kind is Kind.TABLE:
            read_types[fold(column.source)] = target_field.type
    fields = []
    for table_field in plan.decoded_fields:
        read_type = read_types.get(fold(table_field.name), table_field.type)
        fields.append(pa.field(table_field.name, read_type))
    rescue = next((c.source for c in plan.columns if c.kind is Kind.RESCUED), None)
    if not plan.spec.file_format.list_table:
        return Decode(
            tuple(fields),
            rescue=rescue,
            positions={fold(f.name): i for i, f in enumerate(plan.table.data_fields)},
            fail_on_new=plan.spec.schema_evolution is Evolution.FAIL_ON_NEW_COLUMNS,
        )
    elements = tuple(
        sorted({c.index for c in plan.columns if c.kind is Kind.ELEMENT and c.source == COLUMNS})
    )
    whole = any(c.kind is Kind.TABLE and c.source == COLUMNS for c in plan.columns)
    return Decode((), elements, whole, rescue=rescue)
