"""The table schema of a scan: one set of columns and types for all its files.

Drill's ScanSchemaTracker learns the schema as readers open files, one
after the other, and may change it mid-scan. Spark needs the schema before
the first task runs, so here it is settled on the driver, up front, from
the provided schema and the files' samples (``sampling``):

- Columns are matched by name without case; the first spelling seen is the
  table's.
- Without a provided schema, the columns are the union over the files, in
  order of first appearance: the first file's columns in its order, then
  each new column where it first turns up.
- With a provided schema, its columns come first, in its order and with its
  types and nullability; the files' other columns follow
  (``evolution="add_new_columns"``, the default), or the provided schema
  fixes the set (every other mode).
- A fixed set without a provided schema: the first file that has columns
  fixes the set and order. Columns first seen in later files are dropped
  with a logged warning (``none``, also written ``strict=True``), kept in
  the rescued-data column by the readers (``rescue``), or an error naming
  the file and the columns (``fail_on_new_columns``). Types of the fixed
  columns still widen.
- Types widen by the rules of ``widening``; a conflict names the column,
  both types and the files that gave them, unless the provided schema gives
  the type (each file's values are then cast to it on reading). A scan that
  keeps going past bad values (``on_error`` other than ``fail``, or a
  rescued-data column) has no conflicts: the column keeps the type of the
  first file (and record) that gave it one, widened where a rule allows, and
  each value that does not convert to it is a bad record of that policy, or
  rescued, wherever the readers meet it.
- A column that is only ever null, or known nowhere, is a nullable string.
- Headerless csv/tsv and text have one column, ``columns``: a list of
  strings, one element per field, as in Drill. A provided schema instead
  names their fields by position.

Provided-schema fields marked with ``connect_plugin.implicit`` metadata are
implicit columns under the given name; they must be strings, and a ``dirN``
one must be nullable, as Drill demands. Any other field of the provided
schema is a column of the data, whatever its name (``dir0`` too).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from connect_plugin.errors import InvalidScanSpec, SchemaConflict, SchemaEvolutionError
from connect_plugin.scanning.choices import Evolution, OnError
from connect_plugin.scanning.files.files import ScanFile
from connect_plugin.scanning.formats import COLUMNS, STRING_LIST, FileSample
from connect_plugin.scanning.formats.rescue import new_columns_message
from connect_plugin.scanning.formats.widening import (
    TypeClash,
    merge_types,
    normalize_type,
    without_nulls,
)
from connect_plugin.scanning.names import fold
from connect_plugin.scanning.planning.implicit import (
    FILE_COLUMNS,
    IMPLICIT_MARKER,
    dir_index,
)
from connect_plugin.scanning.request.spec import ScanSpec

log = logging.getLogger(__name__)

LIST_TABLE_FIELD = pa.field(COLUMNS, STRING_LIST)


@dataclass(frozen=True)
class TableSchema:
    """The table's columns in order, and which of them stand for implicit columns.

    ``implicit`` maps a folded field name to its implicit kind (``filename``,
    ..., ``dir0``, ...) for provided-schema fields that name one.
    ``provided`` holds the folded names whose type the provided schema fixed.
    ``conflicts`` holds, by folded name, the message of a type conflict no
    rule settles: an error only if the output needs that column.
    """

    fields: tuple[pa.Field, ...]
    implicit: Mapping[str, str] = field(default_factory=dict)
    provided: frozenset[str] = frozenset()
    conflicts: Mapping[str, str] = field(default_factory=dict)

    def check(self, name: str) -> None:
        """Raise the type conflict of a table column the output needs, if it has one."""
        message = self.conflicts.get(fold(name))
        if message is not None:
            raise SchemaConflict(message)

    def field(self, name: str) -> pa.Field | None:
        key = fold(name)
        return next((f for f in self.fields if fold(f.name) == key), None)

    @property
    def data_fields(self) -> tuple[pa.Field, ...]:
        """The fields read from files: all but the implicit ones."""
        return tuple(f for f in self.fields if fold(f.name) not in self.implicit)


def provided_implicit(spec: ScanSpec) -> dict[str, str]:
    """Folded names of provided-schema fields marked as implicit columns, with their kind.

    A field only named like one (``dir0``) is a column of the data, as every other name
    of the schema is.
    """
    schema = spec.provided_schema
    if schema is None:
        return {}
    kinds = {}
    for provided in schema:
        marker = (provided.metadata or {}).get(IMPLICIT_MARKER)
        if marker is None:
            continue
        kind = marker.decode("utf-8", errors="replace").lower()
        if kind not in FILE_COLUMNS and dir_index(kind) is None:
            raise InvalidScanSpec(
                f"provided column '{provided.name}' references an undefined implicit column "
                f"'{kind}'; use one of {', '.join(FILE_COLUMNS)} or dirN"
            )
        if not (pa.types.is_string(provided.type) or pa.types.is_large_string(provided.type)):
            raise InvalidScanSpec(
                f"provided column '{provided.name}' is the implicit column {kind} but has the "
                f"wrong type {provided.type}; implicit columns are strings"
            )
        if dir_index(kind) is not None and not provided.nullable:
            raise InvalidScanSpec(
                f"provided column '{provided.name}' is the partition column {kind} but has the "
                "wrong type: not nullable; partition columns are null below shallow files"
            )
        kinds[fold(provided.name)] = kind
    return kinds


def resolve_table(
    spec: ScanSpec, files: Sequence[ScanFile], samples: Sequence[FileSample] | None
) -> TableSchema:
    """Settle the table schema; ``samples`` is None when the provided schema is enough."""
    implicit = provided_implicit(spec)
    provided = list(spec.provided_schema or ())
    provided_fields = [f.with_type(normalize_type(f.type)) for f in provided]
    fixed = frozenset(fold(f.name) for f in provided_fields) - set(implicit)
    file_format = spec.file_format
    if file_format.list_table:
        return TableSchema((LIST_TABLE_FIELD,))
    evolution = spec.schema_evolution
    if file_format.headerless or samples is None:
        return TableSchema(tuple(provided_fields), implicit, fixed)
    if evolution.fixes_schema and provided_fields:
        allowed = {fold(f.name) for f in provided_fields} | set(implicit)
        _new_columns(evolution, files, samples, allowed, "the provided schema")
        return TableSchema(tuple(provided_fields), implicit, fixed)
    columns = _Union()
    for found in provided_fields:
        columns.fix(found)
    kept: set[str] | None = None
    if evolution.fixes_schema:
        pairs = zip(files, samples, strict=True)
        first = next(((scan_file, sample) for scan_file, sample in pairs if sample.fields), None)
        kept = {fold(f.name) for f in first[1].fields} if first else set()
        first_path = first[0].path if first else ""
        _new_columns(evolution, files, samples, kept, f"the first file ({first_path})")
    for scan_file, sample in zip(files, samples, strict=True):
        for found in sample.fields:
            if kept is None or fold(found.name) in kept:
                columns.add(found, scan_file)
        for key, message in sample.conflicts.items():
            columns.conflict(key, message)
    conflicts = columns.conflicts if _conflicts_fail(spec) else {}
    return TableSchema(columns.fields(), implicit, fixed, conflicts)


def _conflicts_fail(spec: ScanSpec) -> bool:
    """Whether a type conflict fails the scan: only under ``on_error="fail"`` without a
    rescued-data column; otherwise its values are bad records (or rescued) when read."""
    return spec.on_error is OnError.FAIL and spec.rescued_column is None


def _new_columns(
    evolution: Evolution,
    files: Sequence[ScanFile],
    samples: Sequence[FileSample],
    kept: set[str],
    fixed_by: str,
) -> None:
    """Columns of later files outside the fixed schema: an error, a warning, or (rescue) nothing."""
    if evolution is Evolution.RESCUE:
        return
    if evolution is Evolution.NONE:
        _warn_dropped(files, samples, kept, fixed_by)
        return
    for scan_file, sample in zip(files, samples, strict=True):
        new = [f.name for f in sample.fields if fold(f.name) not in kept]
        if new:
            raise SchemaEvolutionError(new_columns_message(scan_file.url, new, fixed_by))


class _Union:
    """Columns by folded name: the table field so far, the file that first gave it, and
    whether later files widened its type."""

    def __init__(self) -> None:
        self._columns: dict[str, tuple[pa.Field, str, bool]] = {}
        self._fixed: set[str] = set()
        self.conflicts: dict[str, str] = {}

    def conflict(self, key: str, message: str) -> None:
        if key not in self._fixed:
            self.conflicts.setdefault(key, message)

    def fix(self, provided: pa.Field) -> None:
        key = fold(provided.name)
        self._columns[key] = (provided, "the provided schema", False)
        self._fixed.add(key)

    def add(self, found: pa.Field, scan_file: ScanFile) -> None:
        key = fold(found.name)
        known = self._columns.get(key)
        if known is None:
            self._columns[key] = (pa.field(found.name, found.type), scan_file.url, False)
            return
        if key in self._fixed:
            return
        table_field, origin, widened = known
        try:
            merged = merge_types(table_field.type, found.type)
        except TypeClash as clash:
            since = " and the files after it" if widened else ""
            self.conflict(
                key,
                f"column '{table_field.name}{clash.path}' is {clash.left} in file {origin}"
                f"{since} but {clash.right} in file {scan_file.url}; no widening rule joins "
                "them. Give the column's type in the scan's schema to cast every file to it, "
                "scan with on_error='null' or 'skip' to keep the first file's type and take "
                "values that do not convert as bad records, or scan the files apart",
            )
            return
        widened = widened or merged != table_field.type
        self._columns[key] = (table_field.with_type(merged), origin, widened)

    def fields(self) -> tuple[pa.Field, ...]:
        result = []
        for key, (table_field, _, _) in self._columns.items():
            if key in self._fixed:
                result.append(table_field)
            else:
                result.append(pa.field(table_field.name, without_nulls(table_field.type)))
        return tuple(result)


def _warn_dropped(
    files: Sequence[ScanFile], samples: Sequence[FileSample], allowed: set[str], fixed_by: str
) -> None:
    dropped: dict[str, list[str]] = {}
    for scan_file, sample in zip(files, samples, strict=True):
        for found in sample.fields:
            if fold(found.name) not in allowed:
                dropped.setdefault(found.name, []).append(scan_file.url)
    for name, paths in dropped.items():
        more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
        log.warning(
            "strict scan: column '%s' of file %s%s is not in the schema fixed by %s and is "
            "dropped (evolution='none'); scan with strict=False to keep it",
            name,
            paths[0],
            more,
            fixed_by,
        )
