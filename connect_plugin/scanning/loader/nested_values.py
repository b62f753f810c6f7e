"""Rules for nested columns: lists (variable, large, fixed-size), structs and maps.

A nested value is checked element by element, except a list whose elements
all have a scalar's exact Python types, which is measured in bulk. Its
variable bytes include its children's fixed-width parts, since a child
array's length follows the number of elements, not the number of rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import Any

import pyarrow as pa

from connect_plugin.scanning.loader.values import (
    MISSING,
    NO_EMPTY,
    ValueMismatch,
    ValueRules,
    bitmap_bytes,
)


class ListRules(ValueRules):
    """Variable-size, large and fixed-size lists; the child is measured per element."""

    __slots__ = ("child", "size")

    def __init__(self, arrow_type: pa.DataType, nullable: bool, child: ValueRules) -> None:
        self.child = child
        self.size: int | None = None
        if pa.types.is_fixed_size_list(arrow_type):
            self.size = arrow_type.list_size
            width = self.size * child.width
            bitmaps = 1 + self.size * child.bitmaps
            constant = child.constant
            child_empty = child.default()
            empty: Any = NO_EMPTY if child_empty is NO_EMPTY else [child_empty] * self.size
        else:
            offset = 8 if pa.types.is_large_list(arrow_type) else 4
            width, bitmaps, constant, empty = offset, 1, offset + child.constant, ()
        super().__init__(
            arrow_type,
            nullable,
            width=width,
            bitmaps=bitmaps,
            constant=constant,
            empty=empty,
            exact=frozenset(),
            census=frozenset({list, tuple}),
        )

    def accept(self, value: Any) -> tuple[Any, int]:
        if not isinstance(value, (list, tuple)):
            raise ValueMismatch(self.describe(), value)
        count = len(value)
        if self.size is not None and count != self.size:
            raise ValueMismatch(f"{self.describe()} ({self.size} elements)", value)
        child = self.child
        var = (
            0
            if self.size is not None
            else count * child.width + bitmap_bytes(count) * child.bitmaps
        )
        if child.exact and set(map(type, value)) <= child.exact:
            return tuple(value), var + child.exact_values_bytes(value)
        out = []
        for index, element in enumerate(value):
            try:
                stored, size = child.slot_value(element)
            except ValueMismatch as exc:
                raise exc.inside(f"[{index}]") from None
            out.append(stored)
            var += size
        return out, var

    def screen(self, values: Iterable[Any]) -> bool:
        if not isinstance(values, Sequence):
            values = list(values)
        if self.census is None or not set(map(type, values)) <= self.census:
            return False
        return self.child.screen(chain.from_iterable(filter(None, values)))

    def array_var_bytes(self, array: pa.Array) -> int:
        child = self.child
        if self.size is not None:
            values = array.values.slice(array.offset * self.size, len(array) * self.size)
            return child.array_var_bytes(values)
        offsets = array.offsets
        start = offsets[0].as_py()
        count = int(offsets[len(array)].as_py() - start)
        values = array.values.slice(start, count)
        return (
            count * child.width
            + bitmap_bytes(count) * child.bitmaps
            + child.array_var_bytes(values)
        )


class StructRules(ValueRules):
    """Structs take a mapping whose keys match field names regardless of case."""

    __slots__ = ("children", "lookup", "names")

    def __init__(self, arrow_type: pa.DataType, nullable: bool, children: list[ValueRules]) -> None:
        self.children = children
        self.names = [arrow_type.field(i).name for i in range(arrow_type.num_fields)]
        self.lookup: dict[str, int] = {}
        for index, name in enumerate(self.names):
            self.lookup.setdefault(name, index)
            self.lookup.setdefault(name.casefold(), index)
        defaults = [child.default() for child in children]
        empty: Any = (
            NO_EMPTY if NO_EMPTY in defaults else dict(zip(self.names, defaults, strict=True))
        )
        super().__init__(
            arrow_type,
            nullable,
            width=sum(child.width for child in children),
            bitmaps=1 + sum(child.bitmaps for child in children),
            constant=sum(child.constant for child in children),
            empty=empty,
            exact=frozenset(),
            census=frozenset(),
        )

    def accept(self, value: Any) -> tuple[Any, int]:
        if not isinstance(value, Mapping):
            raise ValueMismatch(f"{self.describe()} (a mapping of field names to values)", value)
        found: list[Any] = [MISSING] * len(self.children)
        for key, item in value.items():
            index = self.lookup.get(key) if isinstance(key, str) else None
            if index is None and isinstance(key, str):
                index = self.lookup.get(key.casefold())
            if index is None:
                raise ValueMismatch(f"one of the fields {self.names}", key).inside(f".{key}")
            found[index] = item
        out: dict[str, Any] = {}
        var = 0
        for name, child, item in zip(self.names, self.children, found, strict=True):
            try:
                stored, size = child.slot_value(item)
            except ValueMismatch as exc:
                raise exc.inside(f".{name}") from None
            out[name] = stored
            var += size
        return out, var

    def array_var_bytes(self, array: pa.Array) -> int:
        return sum(
            child.array_var_bytes(array.field(index)) for index, child in enumerate(self.children)
        )


class MapRules(ValueRules):
    """Maps take a mapping or a sequence of key/value pairs; keys are never null."""

    __slots__ = ("item", "key")

    def __init__(
        self, arrow_type: pa.DataType, nullable: bool, key: ValueRules, item: ValueRules
    ) -> None:
        self.key = key
        self.item = item
        super().__init__(
            arrow_type,
            nullable,
            width=4,
            constant=4 + key.constant + item.constant,
            empty=(),
            exact=frozenset(),
            census=frozenset(),
        )

    def accept(self, value: Any) -> tuple[Any, int]:
        pairs: Iterable[Any]
        if isinstance(value, Mapping):
            pairs = value.items()
        elif isinstance(value, (list, tuple)):
            pairs = value
        else:
            raise ValueMismatch(f"{self.describe()} (a mapping or key/value pairs)", value)
        key, item = self.key, self.item
        out = []
        var = 0
        for index, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueMismatch("a (key, value) pair", pair).inside(f"[{index}]")
            try:
                stored_key, key_size = key.slot_value(pair[0])
                stored_item, item_size = item.slot_value(pair[1])
            except ValueMismatch as exc:
                raise exc.inside(f"[{pair[0]!r}]") from None
            out.append((stored_key, stored_item))
            var += key_size + item_size
        count = len(out)
        entry_bitmaps = 1 + key.bitmaps + item.bitmaps
        return out, var + count * (key.width + item.width) + bitmap_bytes(count) * entry_bitmaps

    def array_var_bytes(self, array: pa.Array) -> int:
        offsets = array.offsets
        start = offsets[0].as_py()
        count = int(offsets[len(array)].as_py() - start)
        keys = array.keys.slice(start, count)
        items = array.items.slice(start, count)
        key, item = self.key, self.item
        return (
            count * (key.width + item.width)
            + bitmap_bytes(count) * (1 + key.bitmaps + item.bitmaps)
            + key.array_var_bytes(keys)
            + item.array_var_bytes(items)
        )
