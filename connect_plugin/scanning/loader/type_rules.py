"""Which value rules a column of a given Arrow type gets."""

from __future__ import annotations

import pyarrow as pa

from connect_plugin.errors import UnsupportedColumnType
from connect_plugin.scanning.loader.nested_values import ListRules, MapRules, StructRules
from connect_plugin.scanning.loader.scalar_values import (
    BinaryRules,
    BoolRules,
    DateRules,
    DecimalRules,
    FixedBinaryRules,
    FloatRules,
    IntRules,
    NullRules,
    StringRules,
    TemporalRules,
)
from connect_plugin.scanning.loader.values import ValueRules


def rules_for(field: pa.Field) -> ValueRules:
    """The rules of a column; ``UnsupportedColumnType`` for types the writer cannot build."""
    return _rules(field.type, field.nullable, field.name)


def _rules(arrow_type: pa.DataType, nullable: bool, where: str) -> ValueRules:
    types = pa.types
    if types.is_integer(arrow_type):
        return IntRules(arrow_type, nullable)
    if types.is_floating(arrow_type):
        return FloatRules(arrow_type, nullable)
    if types.is_boolean(arrow_type):
        return BoolRules(arrow_type, nullable)
    if types.is_string(arrow_type) or types.is_large_string(arrow_type):
        return StringRules(arrow_type, nullable)
    if types.is_binary(arrow_type) or types.is_large_binary(arrow_type):
        return BinaryRules(arrow_type, nullable)
    if types.is_fixed_size_binary(arrow_type) and not types.is_decimal(arrow_type):
        return FixedBinaryRules(arrow_type, nullable)
    if types.is_date(arrow_type):
        return DateRules(arrow_type, nullable)
    if types.is_timestamp(arrow_type) or types.is_time(arrow_type) or types.is_duration(arrow_type):
        return TemporalRules(arrow_type, nullable)
    if types.is_decimal(arrow_type):
        return DecimalRules(arrow_type, nullable)
    if types.is_null(arrow_type):
        return NullRules(arrow_type, nullable)
    if types.is_map(arrow_type):
        key = _rules(arrow_type.key_type, False, f"{where}.key")
        item_field = arrow_type.item_field
        item = _rules(item_field.type, item_field.nullable, f"{where}.value")
        return MapRules(arrow_type, nullable, key, item)
    if (
        types.is_list(arrow_type)
        or types.is_large_list(arrow_type)
        or types.is_fixed_size_list(arrow_type)
    ):
        child_field = arrow_type.value_field
        child = _rules(child_field.type, child_field.nullable, f"{where}[]")
        return ListRules(arrow_type, nullable, child)
    if types.is_struct(arrow_type):
        fields = [arrow_type.field(i) for i in range(arrow_type.num_fields)]
        children = [_rules(f.type, f.nullable, f"{where}.{f.name}") for f in fields]
        return StructRules(arrow_type, nullable, children)
    raise UnsupportedColumnType(
        f"column '{where}' has type {arrow_type}, which the row writer cannot build; "
        "use a primitive, string, binary, temporal, decimal, list, struct or map type"
    )
