"""How the types two files (or two records) give one column become one type.

The rules, applied to a column's types in the order the files are listed:

- The same type stays. ``null`` (a JSON column that was only ever null)
  gives way to any type.
- Integers widen to the wider integer: int8 -> int16 -> int32 -> int64.
  Mixing signed and unsigned gives int64 (uint64 with anything signed is a
  conflict, since no integer holds both).
- An integer meeting a float gives float64 (double); float32 meets float64
  as float64. This is the "int -> bigint -> double" ladder of Drill and
  Spark's JSON inference.
- Timestamps with the same time zone and different units take the finer
  unit; date32 and date64 give date32.
- Structs merge member by member (union by name, by these same rules),
  lists merge their element types, maps their key and value types.
- Anything else (a string meeting a number, a list meeting a scalar, two
  decimals of different scale, different time zones) is a conflict. The
  scan then fails with both files, the column and both types, unless the
  provided schema gives the column's type: then every file's values are
  cast to it as they are read.

Before merging, types are brought to one spelling per Spark type, because
Spark sees them that way: dictionary-encoded columns by their value type,
``large_string``/``large_binary``/``large_list`` by the plain ones.
"""

from __future__ import annotations

import pyarrow as pa

from connect_plugin.scanning.names import fold

_INT_ORDER = (pa.int8(), pa.int16(), pa.int32(), pa.int64())
_UNSIGNED_TO_SIGNED = {
    pa.uint8(): pa.int16(),
    pa.uint16(): pa.int32(),
    pa.uint32(): pa.int64(),
}


class TypeClash(Exception):
    """Two types of one column have no common type; ``path`` is the member inside the column."""

    def __init__(self, left: pa.DataType, right: pa.DataType, path: str = "") -> None:
        super().__init__(f"{left} vs {right}")
        self.left = left
        self.right = right
        self.path = path


def normalize_type(arrow_type: pa.DataType) -> pa.DataType:
    """One spelling per Spark type: no dictionaries, no large variants, nested alike."""
    types = pa.types
    if types.is_dictionary(arrow_type):
        return normalize_type(arrow_type.value_type)
    if types.is_large_string(arrow_type) or types.is_string_view(arrow_type):
        return pa.string()
    if types.is_large_binary(arrow_type) or types.is_binary_view(arrow_type):
        return pa.binary()
    if (
        types.is_list(arrow_type)
        or types.is_large_list(arrow_type)
        or types.is_list_view(arrow_type)
        or types.is_large_list_view(arrow_type)
    ):
        return pa.list_(_normalize_field(arrow_type.value_field))
    if types.is_struct(arrow_type):
        return pa.struct(
            [_normalize_field(arrow_type.field(i)) for i in range(arrow_type.num_fields)]
        )
    if types.is_map(arrow_type):
        return pa.map_(normalize_type(arrow_type.key_type), _normalize_field(arrow_type.item_field))
    return arrow_type


def _normalize_field(field: pa.Field) -> pa.Field:
    return field.with_type(normalize_type(field.type))


def nullable_type(arrow_type: pa.DataType) -> pa.DataType:
    """The type with every nested member and element nullable, as files read leniently are."""
    types = pa.types
    if types.is_list(arrow_type):
        return pa.list_(pa.field("element", nullable_type(arrow_type.value_type)))
    if types.is_struct(arrow_type):
        return pa.struct(
            [
                pa.field(arrow_type.field(i).name, nullable_type(arrow_type.field(i).type))
                for i in range(arrow_type.num_fields)
            ]
        )
    if types.is_map(arrow_type):
        return pa.map_(arrow_type.key_type, nullable_type(arrow_type.item_type))
    return arrow_type


def fold_members(arrow_type: pa.DataType) -> pa.DataType:
    """The type with the members of each struct that fold to one name (``names``) made one
    member, spelled as the first, its type merged by these rules (the first where none
    joins them): a file's ``{"m": {"a": 1}}`` and ``{"m": {"A": 2}}`` are one member."""
    types = pa.types
    if types.is_list(arrow_type):
        return pa.list_(arrow_type.value_field.with_type(fold_members(arrow_type.value_type)))
    if types.is_map(arrow_type):
        item = arrow_type.item_field
        return pa.map_(arrow_type.key_type, item.with_type(fold_members(item.type)))
    if not types.is_struct(arrow_type):
        return arrow_type
    members: dict[str, pa.Field] = {}
    for index in range(arrow_type.num_fields):
        member = arrow_type.field(index)
        member = member.with_type(fold_members(member.type))
        key = fold(member.name)
        known = members.get(key)
        if known is None:
            members[key] = member
            continue
        try:
            members[key] = known.with_type(merge_types(known.type, member.type))
        except TypeClash:
            continue
    return pa.struct(list(members.values()))


def without_nulls(arrow_type: pa.DataType) -> pa.DataType:
    """Replace the ``null`` type, also inside nested types, by string: the type of the unknown."""
    types = pa.types
    if types.is_null(arrow_type):
        return pa.string()
    if types.is_list(arrow_type):
        return pa.list_(arrow_type.value_field.with_type(without_nulls(arrow_type.value_type)))
    if types.is_struct(arrow_type):
        return pa.struct(
            [
                arrow_type.field(i).with_type(without_nulls(arrow_type.field(i).type))
                for i in range(arrow_type.num_fields)
            ]
        )
    if types.is_map(arrow_type):
        return pa.map_(
            without_nulls(arrow_type.key_type),
            arrow_type.item_field.with_type(without_nulls(arrow_type.item_type)),
        )
    return arrow_type


def merge_types(left: pa.DataType, right: pa.DataType) -> pa.DataType:
    """The common type of two normalized types; ``TypeClash`` when there is none."""
    if left == right:
        return left
    types = pa.types
    if types.is_null(left):
        return right
    if types.is_null(right):
        return left
    if types.is_integer(left) and types.is_integer(right):
        return _merge_integers(left, right)
    if _is_number(left) and _is_number(right):
        return pa.float64()
    if types.is_timestamp(left) and types.is_timestamp(right) and left.tz == right.tz:
        return left if _unit_rank(left.unit) >= _unit_rank(right.unit) else right
    if types.is_date(left) and types.is_date(right):
        return pa.date32()
    if types.is_struct(left) and types.is_struct(right):
        return _merge_structs(left, right)
    if types.is_list(left) and types.is_list(right):
        try:
            element = merge_types(left.value_type, right.value_type)
        except TypeClash as clash:
            raise TypeClash(clash.left, clash.right, "[]" + clash.path) from None
        return pa.list_(left.value_field.with_type(element))
    if types.is_map(left) and types.is_map(right):
        try:
            key = merge_types(left.key_type, right.key_type)
            item = merge_types(left.item_type, right.item_type)
        except TypeClash as clash:
            raise TypeClash(clash.left, clash.right, "{}" + clash.path) from None
        return pa.map_(key, left.item_field.with_type(item))
    raise TypeClash(left, right)


def _is_number(arrow_type: pa.DataType) -> bool:
    return bool(pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type))


def _merge_integers(left: pa.DataType, right: pa.DataType) -> pa.DataType:
    if pa.types.is_uint64(left) or pa.types.is_uint64(right):
        raise TypeClash(left, right)
    signed = [_UNSIGNED_TO_SIGNED.get(t, t) for t in (left, right)]
    return max(signed, key=_INT_ORDER.index)


def _unit_rank(unit: str) -> int:
    return ("s", "ms", "us", "ns").index(unit)


def _merge_structs(left: pa.DataType, right: pa.DataType) -> pa.DataType:
    fields = [left.field(i) for i in range(left.num_fields)]
    position = {fold(field.name): index for index, field in enumerate(fields)}
    for i in range(right.num_fields):
        other = right.field(i)
        index = position.get(fold(other.name))
        if index is None:
            position[fold(other.name)] = len(fields)
            fields.append(other)
            continue
        try:
            merged = merge_types(fields[index].type, other.type)
        except TypeClash as clash:
            raise TypeClash(clash.left, clash.right, f".{fields[index].name}{clash.path}") from None
        fields[index] = fields[index].with_type(merged)
    return pa.struct(fields)
