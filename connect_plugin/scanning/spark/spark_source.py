"""The scan as a Spark Python data source: the one module of the scan that imports pyspark.

The gateway turns the plugin's ``Scan`` relation into a read of format
``connect_plugin_scan`` with the option ``spec`` holding ``ScanSpec.to_json()``.
Spark then calls, in Python workers:

- ``schema()`` once when the read is analysed: the scan is planned here
  (files listed, sampled, schema resolved) and the plan kept on the data
  source object, which Spark pickles on to the planning worker, so
  ``reader()`` does not plan again; a read with ``keptPlan`` takes the
  columns of the scan's first plan from that file, or keeps its own plan
  there when it is the first (``planning.kept``), so every read of one
  ``scan()`` has its columns however the files changed;
- ``reader(schema)``, ``partitions()``: contiguous runs of files balanced
  by bytes, after partition pruning by the spec's ``file_filter``;
- ``read(partition)`` on the executors, yielding ``pyarrow.RecordBatch``es
  (and, for ``on_error="reject"``, writing each file's rejects to the
  rejects folder: ``rejects``).

Spark keeps what ``reader()`` and ``partitions()`` gave with a plan it keeps
(Spark Connect's plan cache, a temporary view), while a query the gateway
rewrote (a filter, a count) is planned anew. So that every query of a
DataFrame or view reads the same files, whatever its shape, ``read()`` lists
the files again: unchanged, it reads its partition's run; changed, its share
of the runs the files there are now make (``share``). A file deleted since
the planning is then not read, one added is.

A scan error leaves each of these with its class first, and any other exception
as a scan error naming the file being read (``worker_errors``).

The reader takes no filters from Spark (``pushFilters``): Spark 4.1 to 4.3
keep the reader that one query's filters narrowed on the data source object
its analysed plan shares, and hand it to later queries of the same
DataFrame or view, which then silently read only the first query's files.
Pruning comes from the spec instead, where the gateway puts what a query's
``Filter`` says of partition columns; each query's scan then carries its
own, and no state outlives a query.

Spark checks each batch's Arrow schema against the one it derives from the
Spark schema (``to_arrow_schema`` with UTC timestamps), so batches are
cast to exactly that: ``string`` not ``large_string``, ``timestamp[us, UTC]``
for zoned timestamps, ``timestamp[us]`` for naive ones, no dictionaries.
Arrow types Spark has no type for are widened first (unsigned integers to
the next signed size, ``uint64`` to ``decimal(20, 0)``, ``float16`` to
float, ``date64`` to date, ``time`` to string).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import LongType, StructField, StructType

from connect_plugin.errors import InvalidScanSpec
from connect_plugin.scanning.files.files import ScanFile, file_groups
from connect_plugin.scanning.planning.kept import kept_plan
from connect_plugin.scanning.planning.plan import ScanPlan, plan_scan
from connect_plugin.scanning.planning.pruning import prune
from connect_plugin.scanning.reading.rejects import RejectFiles
from connect_plugin.scanning.reading.scanner import ScanReader
from connect_plugin.scanning.request.spec import ScanSpec
from connect_plugin.scanning.spark.spark_versions import spark_arrow_schema_of
from connect_plugin.scanning.spark.worker_errors import reading, reported, reported_batches

SHORT_NAME = "connect_plugin_scan"
SPEC_OPTION = "spec"

COUNT_OPTION = "countRows"
"""Set to ``true`` to read, per file, one row holding its record count (column ``rows``)."""

COUNT_COLUMN = "rows"

FILES_STAMP_OPTION = "filesStamp"
"""Not read by the source: a stamp of the files of the table scanned, for a temp table new
whenever Spark adds files to it in place (INSERT, a scan's rejects), for a catalog table new
on every read. Spark Connect keeps the plan of a read it saw before, and with it the file
list this source made when planning; a new stamp makes the read another one, planned
again."""

KEPT_PLAN_OPTION = "keptPlan"
"""The path of the file that keeps the columns of the scan's first plan (``planning.kept``):
set by the gateway for a scan of ``scan()``, whose every plan then keeps that plan's
columns, however the files changed since."""

MIN_PARTITIONS_OPTION = "minPartitions"
"""Spark partitions to make at least (files allowing); the planning worker's cores by default."""


class ScanDataSource(DataSource):
    """Schema-on-read file scans.

    Options: ``spec`` (``ScanSpec.to_json()``, required), ``minPartitions``,
    ``filesStamp``, ``keptPlan``, and the object-store options as ``secret.s3.*``
    (``ScanSpec.secret_options()``), apart from the spec so that Spark redacts
    them in every plan it prints.
    """

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self._plan: ScanPlan | None = None

    @classmethod
    def name(cls) -> str:
        return SHORT_NAME

    def spec(self) -> ScanSpec:
        text = self.options.get(SPEC_OPTION)
        if not text:
            raise InvalidScanSpec(
                f"the {SHORT_NAME} data source needs the option '{SPEC_OPTION}' holding "
                "ScanSpec.to_json(); read it through connect_plugin.scan(), not by hand"
            )
        return ScanSpec.from_json(text, ScanSpec.storage_from_options(self.options))

    def plan(self) -> ScanPlan:
        """The scan's plan, made once per data source object and pickled along with it."""
        if self._plan is None:
            kept = self.options.get(KEPT_PLAN_OPTION)
            self._plan = kept_plan(self.spec(), kept) if kept else plan_scan(self.spec())
        return self._plan

    @reported
    def schema(self) -> StructType:
        if self._counts_rows():
            self.plan()
            return StructType([StructField(COUNT_COLUMN, LongType(), nullable=False)])
        return spark_schema(self.plan().schema)

    @reported
    def reader(self, schema: StructType) -> ScanSourceReader:
        if self._counts_rows():
            return RowCountReader(self.plan(), schema, self._min_partitions())
        return ScanSourceReader(self.plan(), schema, self._min_partitions())

    def _counts_rows(self) -> bool:
        return str(self.options.get(COUNT_OPTION, "false")).lower() == "true"

    def _min_partitions(self) -> int:
        text = self.options.get(MIN_PARTITIONS_OPTION)
        if text is None:
            return os.cpu_count() or 1
        try:
            return max(1, int(text))
        except ValueError:
            raise InvalidScanSpec(
                f"option '{MIN_PARTITIONS_OPTION}' must be a whole number, got {text!r}"
            ) from None


@dataclass
class FileGroup(InputPartition):
    """One Spark partition: a run of files read one after the other, as planned; number
    ``index`` of ``count``."""

    index: int
    files: tuple[ScanFile, ...]
    count: int = 1


class ScanSourceReader(DataSourceReader):
    """Reads file groups into record batches of the Spark schema's Arrow types."""

    def __init__(self, plan: ScanPlan, schema: StructType, min_partitions: int = 1) -> None:
        self.plan = plan
        self.target = spark_arrow_schema_of(schema)
        self.files = prune(plan, plan.spec.file_filter)
        self.min_partitions = min_partitions

    @reported
    def partitions(self) -> list[FileGroup]:
        groups = file_groups(self.files, min_groups=self.min_partitions)
        return [FileGroup(index, tuple(group), len(groups)) for index, group in enumerate(groups)]

    def share(self, partition: InputPartition) -> Sequence[ScanFile]:
        """The files a partition reads: its run, or, where the files changed since the
        planning, its share of the runs of the files there are now."""
        if not isinstance(partition, FileGroup):
            return self.files
        now = prune(self.plan.relisted(), self.plan.spec.file_filter)
        if _stamps(now) == _stamps(self.files):
            return partition.files
        groups = file_groups(now, min_groups=partition.count)
        return [
            found
            for number, group in enumerate(groups)
            if number % partition.count == partition.index
            for found in group
        ]

    @reported_batches
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        files = self.share(partition)
        rejects = RejectFiles.of(self.plan.spec)
        reader = ScanReader(self.plan, self.target, rejects)
        for scan_file in files:
            with reading(scan_file.url):
                if rejects is None:
                    yield from reader.read_file(scan_file)
                else:
                    yield from rejects.read(reader, (scan_file,))


class RowCountReader(ScanSourceReader):
    """One row per file: the number of rows reading it gives (or reading's error).

    A query that only counts rows sums these: each file is read as a query
    reads it, in the types Spark takes, so the count fails where reading
    fails and drops what reading drops, but no row goes to Spark.
    """

    @reported_batches
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        files = self.share(partition)
        reader = ScanReader(self.plan, spark_arrow_schema(self.plan.schema))
        for scan_file in files:
            with reading(scan_file.url):
                rows = reader.count_file(scan_file)
            yield pa.record_batch([pa.array([rows], pa.int64())], schema=self.target)


def _stamps(files: Sequence[ScanFile]) -> list[tuple[str, int, int]]:
    return [(found.path, found.size, found.mtime_ns) for found in files]


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of an Arrow schema, after widening types Spark cannot hold."""
    fields = [pa.field(f.name, sparkable_type(f.type), f.nullable, f.metadata) for f in schema]
    return from_arrow_schema(pa.schema(fields))


def spark_arrow_schema(schema: pa.Schema) -> pa.Schema:
    """The Arrow schema Spark expects batches of this scan to have."""
    return spark_arrow_schema_of(spark_schema(schema))


def sparkable_type(arrow_type: pa.DataType) -> pa.DataType:
    types = pa.types
    widened = {
        pa.uint8(): pa.int16(),
        pa.uint16(): pa.int32(),
        pa.uint32(): pa.int64(),
        pa.uint64(): pa.decimal128(20, 0),
        pa.float16(): pa.float32(),
        pa.date64(): pa.date32(),
    }
    if arrow_type in widened:
        return widened[arrow_type]
    if types.is_time(arrow_type):
        return pa.string()
    if types.is_dictionary(arrow_type):
        return sparkable_type(arrow_type.value_type)
    if types.is_list(arrow_type) or types.is_large_list(arrow_type):
        field = arrow_type.value_field
        return pa.list_(field.with_type(sparkable_type(field.type)))
    if types.is_fixed_size_list(arrow_type):
        field = arrow_type.value_field
        return pa.list_(field.with_type(sparkable_type(field.type)))
    if types.is_struct(arrow_type):
        members: Sequence[pa.Field] = [arrow_type.field(i) for i in range(arrow_type.num_fields)]
        return pa.struct([m.with_type(sparkable_type(m.type)) for m in members])
    if types.is_map(arrow_type):
        item = arrow_type.item_field
        return pa.map_(
            sparkable_type(arrow_type.key_type), item.with_type(sparkable_type(item.type))
        )
    return arrow_type
