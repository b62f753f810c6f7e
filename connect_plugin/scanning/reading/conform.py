"""Turning what a reader decoded from one file into batches of the scan's output schema.

A reader hands over a "raw" batch: the table columns it found in the file,
named as the file spells them, in whatever types the file gave; a column the
file spells several ways (``A`` and ``a``) comes once per spelling. Conforming
finds each column's keys by the name rule (``names``), makes one column of
them (a row that gives it two values fails as ``ConversionFailed`` with
``DuplicateKeys``), picks, orders and casts them, fills columns the file lacks with typed nulls
(or, for a non-nullable provided column, its ``default`` metadata or the
type's empty value, as Drill's missing-column loader does), pulls nested
members and list elements, and adds the implicit and partition columns as
constants. Arrays that already have the output type pass through untouched,
so a batch whose file matches the schema is conformed without copying.

``limit_batches`` then slices the result so that no batch passes
``max_rows`` or ``max_bytes``; slices share the buffers of their parent.
"""

from __future__ import annotations

import decimal
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from connect_plugin.errors import BadRecord, InvalidScanSpec, RowTooLarge, ScanError
from connect_plugin.scanning.choices import OnError
from connect_plugin.scanning.files.files import ScanFile
from connect_plugin.scanning.names import DuplicateKeys, duplicate_keys, fold, merge_keys
from connect_plugin.scanning.planning.implicit import (
    constant_array,
    dir_value,
    file_value,
    hive_pairs,
)
from connect_plugin.scanning.planning.plan import ScanPlan
from connect_plugin.scanning.planning.projection import Kind, OutputColumn

log = logging.getLogger(__name__)

DEFAULT_MARKER = b"default"
"""Field metadata holding the text of a missing non-nullable column's value, as Drill's DEFAULT."""


class ConversionFailed(Exception):
    """A raw column does not cast to its output type; the reader decides what happens next."""

    def __init__(self, column: str, error: Exception) -> None:
        super().__init__(f"column '{column}': {error}")
        self.column = column
        self.error = error


class Conformer:
    """Conforms raw batches of one plan to its output schema (or to ``target``, same names).

    ``target`` lets the Spark binding ask for the Arrow types Spark reads
    back (``timestamp[us, UTC]`` for every zoned timestamp, for instance), so
    that each value is cast once.
    """

    def __init__(self, plan: ScanPlan, target: pa.Schema | None = None) -> None:
        self.plan = plan
        self.columns = plan.columns
        self.schema = target if target is not None else plan.schema
        if self.schema.names != [column.name for column in self.columns]:
            raise ScanError(
                f"the requested output schema {self.schema.names} does not name the scan's "
                f"columns {[column.name for column in self.columns]} in order"
            )
        self._fills: dict[int, pa.Scalar] = {}
        self._keys: dict[tuple[str, ...], dict[str, list[int]]] = {}
        for index, (column, target_field) in enumerate(zip(self.columns, self.schema, strict=True)):
            if not target_field.nullable:
                self._fills[index] = _fill_value(column, target_field)

    def constants(self, scan_file: ScanFile) -> list[Any]:
        """The value of each implicit or partition column for one file (None elsewhere)."""
        values: list[Any] = []
        hive = hive_pairs(scan_file) if any(c.kind is Kind.HIVE for c in self.columns) else {}
        for column, target_field in zip(self.columns, self.schema, strict=True):
            if column.kind is Kind.FILE:
                values.append(file_value(column.source, scan_file))
            elif column.kind is Kind.DIR:
                values.append(dir_value(column.index, scan_file))
            elif column.kind is Kind.HIVE:
                values.append(self._hive(hive.get(column.source), target_field, scan_file))
            else:
                values.append(None)
        return values

    def _hive(self, text: str | None, target: pa.Field, scan_file: ScanFile) -> Any:
        if text is None:
            return None
        try:
            return pa.scalar(text).cast(target.type).as_py()
        except (pa.ArrowException, ValueError) as exc:
            naive = _naive_text_as_utc(pa.array([text]), target.type)
            if naive is not None:
                return naive[0].as_py()
            message = (
                f"file {scan_file.url}: partition directory value {text!r} is not a "
                f"{target.type} for column '{target.name}'"
            )
            if self.plan.spec.on_error is OnError.FAIL:
                raise BadRecord(
                    f"{message}; give the column another type in the scan's schema, or scan "
                    "with on_error='null'"
                ) from exc
            log.warning("%s; the column is null for this file", message)
            return None

    def conform(self, raw: pa.RecordBatch, constants: Sequence[Any]) -> pa.RecordBatch:
        """The output batch for a raw batch; ``ConversionFailed`` when a cast fails."""
        length = raw.num_rows
        if not self.columns:
            return rows_only(length)
        arrays = []
        for index, (column, target_field) in enumerate(zip(self.columns, self.schema, strict=True)):
            array = self._array(column, target_field, raw, constants[index], length)
            fill = self._fills.get(index)
            if fill is not None and array.null_count:
                array = pc.fill_null(array, fill)
            arrays.append(array)
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _array(
        self,
        column: OutputColumn,
        target_field: pa.Field,
        raw: pa.RecordBatch,
        constant: Any,
        length: int,
    ) -> pa.Array:
        target = target_field.type
        kind = column.kind
        if kind in (Kind.FILE, Kind.DIR, Kind.HIVE):
            return constant_array(constant, target, length)
        if kind is Kind.MISSING:
            return pa.nulls(length, type=target)
        if kind is Kind.ELEMENT:
            source = self._element(raw, column)
        else:
            source = self._source(raw, column.source, column)
            if source is not None and kind is Kind.MEMBER:
                source = _member(source, column.path)
        if source is None:
            return pa.nulls(length, type=target)
        return cast_array(source, target, column.name)

    def key_indices(self, raw: pa.RecordBatch, name: str) -> list[int]:
        """The raw columns that are keys of the table column ``name``, by the name rule."""
        names = tuple(raw.schema.names)
        index = self._keys.get(names)
        if index is None:
            index = {}
            for position, key in enumerate(names):
                index.setdefault(fold(key), []).append(position)
            self._keys[names] = index
        return index.get(fold(name), [])

    def _source(self, raw: pa.RecordBatch, name: str, column: OutputColumn) -> pa.Array | None:
        """The table column ``name`` of a raw batch: its one key, or its keys made one."""
        found = self.key_indices(raw, name)
        if not found:
            return None
        if len(found) == 1:
            return raw.column(found[0])
        table_field = self.plan.table.field(name)
        arrays = [raw.column(i) for i in found]
        if table_field is not None and len({a.type for a in arrays}) > 1:
            arrays = [cast_array(a, table_field.type, column.name) for a in arrays]
        merged, twice = merge_keys(arrays)
        if twice is not None:
            keys = [raw.schema.names[i] for i in found]
            error = DuplicateKeys(keys, duplicate_keys(name, keys))
            raise ConversionFailed(column.name, error)
        return merged

    def _element(self, raw: pa.RecordBatch, column: OutputColumn) -> pa.Array | None:
        """``name[n]``, split out by the reader (csv does) or taken from the list column."""
        split = _column(raw, f"{column.source}[{column.index}]")
        if split is not None:
            return split
        whole = self._source(raw, column.source, column)
        return None if whole is None else list_element(whole, column.index)


def _column(raw: pa.RecordBatch, name: str) -> pa.Array | None:
    index = raw.schema.get_field_index(name)
    return raw.column(index) if index >= 0 else None


def _member(array: pa.Array, path: Sequence[str]) -> pa.Array | None:
    for name in path:
        struct_type = array.type
        if not pa.types.is_struct(struct_type):
            return None
        key = fold(name)
        index = next(
            (
                i
                for i in range(struct_type.num_fields)
                if fold(struct_type.field(i).name) == key
            ),
            None,
        )
        if index is None:
            return None
        array = pc.struct_field(array, [index])
    return array


def list_element(array: pa.Array, index: int) -> pa.Array:
    """Element ``index`` of each list, null where a list is null or too short."""
    fixed = pc.list_slice(array, index, index + 1, return_fixed_size_list=True)
    if not fixed.null_count:
        return fixed.flatten()
    values = fixed.values.slice(fixed.offset, len(fixed))
    return pc.if_else(fixed.is_valid(), values, pa.nulls(len(fixed), type=values.type))


def cast_array(array: pa.Array, target: pa.DataType, name: str) -> pa.Array:
    """``array`` as ``target``; ``ConversionFailed`` naming the column when a value does not cast."""
    if array.type == target:
        return array
    if array.null_count == len(array):
        return pa.nulls(len(array), target)
    if _members_differ(array.type, target):
        array = _members_as(array, target, name)
        if array.type == target:
            return array
    try:
        if _widens_to_float(array.type, target):
            return pc.cast(array, target, safe=False)
        return array.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        zoned = _naive_text_as_utc(array, target)
        if zoned is None:
            raise ConversionFailed(name, exc) from exc
        return zoned


def _members_differ(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether a struct inside ``source`` spells a member otherwise than ``target`` does."""
    types = pa.types
    if types.is_list(source) and types.is_list(target):
        return _members_differ(source.value_type, target.value_type)
    if not (types.is_struct(source) and types.is_struct(target)):
        return False
    wanted = {target.field(i).name: target.field(i).type for i in range(target.num_fields)}
    for index in range(source.num_fields):
        member = source.field(index)
        if member.name not in wanted:
            if any(fold(member.name) == fold(name) for name in wanted):
                return True
        elif _members_differ(member.type, wanted[member.name]):
            return True
    return False


def _members_as(array: pa.Array, target: pa.DataType, name: str) -> pa.Array:
    """``array`` with each struct member renamed as ``target`` spells it (``names``), at any
    depth; members that fold to one are made one, and a row where both hold a value fails
    the column (``ConversionFailed``). Members ``target`` lacks stay, for the cast to drop."""
    types = pa.types
    if types.is_list(array.type) and types.is_list(target):
        values = _members_as(array.values, target.value_type, name)
        return pa.ListArray.from_arrays(array.offsets, values, mask=array.is_null())
    if not (types.is_struct(array.type) and types.is_struct(target)):
        return array
    wanted = {fold(target.field(i).name): target.field(i) for i in range(target.num_fields)}
    members: dict[str, list[pa.Array]] = {}
    for index in range(array.type.num_fields):
        member = array.type.field(index)
        child = pc.struct_field(array, [index])
        found = wanted.get(fold(member.name))
        if found is not None:
            child = _members_as(child, found.type, name)
            if len(members.get(found.name, ())) and child.type != found.type:
                child = cast_array(child, found.type, name)
        members.setdefault(found.name if found is not None else member.name, []).append(child)
    children = []
    for member_name, arrays in members.items():
        if len(arrays) > 1:
            found = wanted[fold(member_name)]
            arrays = [cast_array(a, found.type, name) for a in arrays]
            merged, twice = merge_keys(arrays)
            if twice is not None:
                raise ConversionFailed(
                    name,
                    pa.ArrowInvalid(
                        f"two members of '{name}' differ only in case and give member "
                        f"'{member_name}' two values (names are compared without case)"
                    ),
                )
            arrays = [merged]
        children.append(arrays[0])
    return pa.StructArray.from_arrays(children, names=list(members), mask=array.is_null())


def _widens_to_float(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether ``source`` becomes ``target`` by integers turning floats and nothing else.

    That is the widening rule of int and double (``widening``), which Spark's and DuckDB's
    readers apply too: an integer past 2^53 becomes the nearest double, as a json number
    does, where a checked cast would refuse it.
    """
    types = pa.types
    if types.is_integer(source) and types.is_floating(target):
        return True
    if types.is_list(source) and types.is_list(target):
        return _widens_to_float(source.value_type, target.value_type)
    if types.is_struct(source) and types.is_struct(target):
        if source.num_fields != target.num_fields:
            return False
        pairs = [(source.field(i), target.field(i)) for i in range(source.num_fields)]
        return all(
            a.name == b.name and (a.type == b.type or _widens_to_float(a.type, b.type))
            for a, b in pairs
        )
    return False


def _naive_text_as_utc(array: pa.Array, target: pa.DataType) -> pa.Array | None:
    """Timestamps without an offset read into a zoned column as UTC, as pyarrow's json does.

    Arrow's cast insists on an offset in the text; None when that is not the
    problem (or not the only one).
    """
    if not (pa.types.is_string(array.type) and pa.types.is_timestamp(target) and target.tz):
        return None
    try:
        naive = array.cast(pa.timestamp(target.unit))
        return pc.assume_timezone(naive, "UTC").cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def rows_only(length: int) -> pa.RecordBatch:
    """A batch of ``length`` rows and no columns: what an empty projection yields."""
    return pa.RecordBatch.from_arrays([pa.nulls(length)], names=["rows"]).select([])


def _fill_value(column: OutputColumn, target: pa.Field) -> pa.Scalar:
    text = (target.metadata or {}).get(DEFAULT_MARKER)
    if text is not None:
        try:
            return pa.scalar(text.decode()).cast(target.type)
        except (pa.ArrowException, ValueError, UnicodeDecodeError) as exc:
            raise InvalidScanSpec(
                f"column '{column.name}': default value {text!r} is not a {target.type}; fix "
                "the 'default' metadata of the provided schema"
            ) from exc
    return pa.scalar(empty_value(target.type), type=target.type)


def empty_value(arrow_type: pa.DataType) -> Any:
    """The value a non-nullable column without a default gets where a file lacks it."""
    types = pa.types
    if types.is_string(arrow_type) or types.is_large_string(arrow_type):
        return ""
    if types.is_binary(arrow_type) or types.is_large_binary(arrow_type):
        return b""
    if types.is_fixed_size_binary(arrow_type):
        return bytes(arrow_type.byte_width)
    if types.is_boolean(arrow_type):
        return False
    if types.is_list(arrow_type) or types.is_large_list(arrow_type) or types.is_map(arrow_type):
        return []
    if types.is_struct(arrow_type):
        return {
            arrow_type.field(i).name: None
            if arrow_type.field(i).nullable
            else empty_value(arrow_type.field(i).type)
            for i in range(arrow_type.num_fields)
        }
    if types.is_floating(arrow_type):
        return 0.0
    if types.is_decimal(arrow_type):
        return decimal.Decimal(0)
    if types.is_temporal(arrow_type):
        narrow = types.is_date32(arrow_type) or types.is_time32(arrow_type)
        return pa.array([0], pa.int32() if narrow else pa.int64()).cast(arrow_type)[0].as_py()
    return 0


def limit_batches(
    batch: pa.RecordBatch, max_rows: int, max_bytes: int, where: str, first_row: int = 0
) -> Iterator[pa.RecordBatch]:
    """Slices of ``batch`` with at most ``max_rows`` rows and ``max_bytes`` bytes each.

    Sizes are Arrow's ``nbytes`` of each slice. A single row over the byte
    limit is an error naming ``where`` (the file) and the row, counted from
    ``first_row``, the number of rows the file gave before this batch.
    """
    total = batch.num_rows
    start = 0
    while start < total:
        remaining = total - start
        rows = min(remaining, max_rows)
        piece = batch.slice(start, rows)
        size = piece.nbytes
        while size > max_bytes:
            if rows == 1:
                raise RowTooLarge(
                    f"{where}, row {first_row + start + 1}: the row takes {size} bytes, more "
                    f"than a whole batch may hold (max_bytes={max_bytes}); raise max_bytes"
                )
            rows = max(1, min(rows - 1, int(rows * max_bytes / size * 0.95)))
            piece = batch.slice(start, rows)
            size = piece.nbytes
        yield piece
        start += rows
