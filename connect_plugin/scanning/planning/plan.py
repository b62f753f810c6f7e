"""Planning a scan on the driver: files, table schema, output columns.

``plan_scan(spec)`` is what Spark's ``schema()`` needs before any task runs.
It lists the files, samples them only when the provided schema does not
already settle every output column, resolves the table schema and the
projection, and returns a ``ScanPlan`` that the readers on the executors
follow without looking at the files again.

Resolved table schemas are cached per process, keyed by the spec without
its batch limits and by each file's path, size and modification time: a
repeated scan of unchanged files lists them but samples nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pyarrow as pa

from connect_plugin.errors import MissingColumn
from connect_plugin.scanning.choices import Evolution, MissingColumns
from connect_plugin.scanning.files.files import ScanFile, list_files
from connect_plugin.scanning.names import fold
from connect_plugin.scanning.planning.projection import (
    Kind,
    OutputColumn,
    Partitions,
    partitions_of,
    resolve_projection,
)
from connect_plugin.scanning.planning.sampling import needs_sampling, sample_files
from connect_plugin.scanning.planning.schema_tracker import TableSchema, resolve_table
from connect_plugin.scanning.request.spec import ScanSpec

SCHEMA_CACHE_SIZE = 64
"""Resolved table schemas kept per process (one per distinct spec and file set)."""


@dataclass(frozen=True)
class ScanPlan:
    """Everything a reader needs: the files, the table schema and the output columns."""

    spec: ScanSpec
    files: tuple[ScanFile, ...]
    table: TableSchema
    columns: tuple[OutputColumn, ...]
    partitions: Partitions
    from_cache: bool = False

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of every batch the scan yields."""
        return pa.schema([column.field for column in self.columns])

    def relisted(self) -> ScanPlan:
        """The plan over the files there are now, for a query run later than the planning.

        The table and the output columns stay: Spark holds the schema they gave. A file
        added since is read by them (a column it alone has is left out, as one past the
        samples is), a file deleted since is not read at all.
        """
        return replace(self, files=tuple(list_files(self.spec.paths, self.spec.storage)))

    @property
    def decoded_fields(self) -> tuple[pa.Field, ...]:
        """Table columns whose values must be decoded from the files, in table order."""
        needed = {
            fold(column.source)
            for column in self.columns
            if column.kind in (Kind.TABLE, Kind.MEMBER, Kind.ELEMENT)
        }
        return tuple(f for f in self.table.data_fields if fold(f.name) in needed)


def plan_scan(spec: ScanSpec) -> ScanPlan:
    """List, sample as little as needed, and resolve the schema of a scan."""
    files = tuple(list_files(spec.paths, spec.storage))
    partitions = partitions_of(spec, files)
    table = resolve_table(spec, files, None)
    columns = resolve_projection(spec, table, partitions)
    if not _wants_samples(spec, columns):
        _check_missing(spec, table, columns)
        return ScanPlan(spec, files, table, columns, partitions)
    key = (spec.cache_key(), tuple((f.path, f.size, f.mtime_ns) for f in files))
    cached = _CACHE.get(key)
    if cached is not None:
        table = cached
    else:
        table = resolve_table(spec, files, sample_files(spec, files))
        _CACHE.put(key, table)
    columns = resolve_projection(spec, table, partitions)
    _check_missing(spec, table, columns)
    return ScanPlan(spec, files, table, columns, partitions, from_cache=cached is not None)


def _check_missing(spec: ScanSpec, table: TableSchema, columns: Sequence[OutputColumn]) -> None:
    """Under ``missing_columns='error'``, a projected column found nowhere fails the scan."""
    if spec.missing_columns is not MissingColumns.ERROR:
        return
    missing = [column.name for column in columns if column.kind is Kind.MISSING]
    if missing:
        named = ", ".join(f"'{name}'" for name in missing)
        there = ", ".join(f.name for f in table.data_fields) or "none"
        raise MissingColumn(
            f"column(s) {named} of the scan's columns are in no file and not in its schema "
            f"(the columns are: {there}); check the spelling, or scan with "
            "missing_columns='null' to read such a column as nulls"
        )


def _wants_samples(spec: ScanSpec, columns: Sequence[OutputColumn]) -> bool:
    """Whether the files can still change the output: the provided schema does not settle it."""
    if not needs_sampling(spec):
        return False
    evolution = spec.schema_evolution
    if spec.provided_schema is None or evolution is Evolution.FAIL_ON_NEW_COLUMNS:
        return True
    if evolution.fixes_schema:
        return False
    return spec.is_wildcard or any(column.kind is Kind.MISSING for column in columns)


class _SchemaCache:
    """A small thread-safe LRU of resolved table schemas."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[object, TableSchema] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: object) -> TableSchema | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: object, entry: TableSchema) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_CACHE = _SchemaCache(SCHEMA_CACHE_SIZE)


def clear_schema_cache() -> None:
    """Forget every resolved schema (files changed in place within the same second, tests)."""
    _CACHE.clear()
