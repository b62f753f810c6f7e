"""Value conversion on the row path: one parsed value to the Python value of a column type.

The row path reads what the native readers rejected, so it must decide
value by value what the columnar path decides by casts. The rules follow
the widening rules (an integer is fine in a double column) and Spark's
json reader (a string column takes any json value as its json text);
anything else, such as a string in an integer column or a fraction in an
integer column, is a bad value, handled by the scan's ``on_error`` policy.

Delimited text is all strings: a field converts by the same parsing Arrow's
casts use (``"1.5"`` to double, ``"true"`` to bool, ISO text to dates and
timestamps), and an empty field is null in a non-string column.
"""

from __future__ import annotations

import datetime
import decimal
import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from connect_plugin.scanning.names import fold

Converter = Callable[[Any], Any]

INT_RANGES = {bits: (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) for bits in (8, 16, 32, 64)}


class BadValue(Exception):
    """A value does not convert to its column's type; the message says what was expected."""


def json_converter(arrow_type: pa.DataType) -> Converter:
    """Convert a value parsed by ``json.loads`` to a value of ``arrow_type`` (None stays None)."""
    types = pa.types
    if types.is_string(arrow_type) or types.is_large_string(arrow_type):
        return _to_text
    if types.is_boolean(arrow_type):
        return _checked(lambda v: type(v) is bool, arrow_type)
    if types.is_signed_integer(arrow_type):
        low, high = INT_RANGES[arrow_type.bit_width]
        return _checked(lambda v: type(v) is int and low <= v <= high, arrow_type)
    if types.is_floating(arrow_type):
        return _to_float
    if types.is_list(arrow_type) or types.is_large_list(arrow_type):
        element = json_converter(arrow_type.value_type)
        return _list_of(element, arrow_type)
    if types.is_struct(arrow_type):
        members = {
            arrow_type.field(i).name: json_converter(arrow_type.field(i).type)
            for i in range(arrow_type.num_fields)
        }
        return _struct_of(members, arrow_type)
    if types.is_map(arrow_type):
        item = json_converter(arrow_type.item_type)
        return _map_of(item, arrow_type)
    if types.is_timestamp(arrow_type) or types.is_date(arrow_type):
        return _iso_time(arrow_type)
    return _by_arrow(arrow_type)


def text_converter(arrow_type: pa.DataType) -> Converter:
    """Convert a field of delimited text to a value of ``arrow_type``."""
    types = pa.types
    if types.is_string(arrow_type) or types.is_large_string(arrow_type):
        return _same
    if types.is_signed_integer(arrow_type):
        low, high = INT_RANGES[arrow_type.bit_width]
        return _empty_is_null(_parsed_int(low, high, arrow_type))
    if types.is_floating(arrow_type):
        return _empty_is_null(_parsed_float)
    if types.is_timestamp(arrow_type) or types.is_date(arrow_type):
        return _empty_is_null(_iso_time(arrow_type))
    return _empty_is_null(_by_arrow(arrow_type))


def _same(value: Any) -> Any:
    return value


def _to_text(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def _to_float(value: Any) -> Any:
    if value is None or type(value) is float:
        return value
    if type(value) is int:
        return float(value)
    raise BadValue(f"a number for a double column, got {_describe(value)}")


def _checked(test: Callable[[Any], bool], arrow_type: pa.DataType) -> Converter:
    def convert(value: Any) -> Any:
        if value is None or test(value):
            return value
        raise BadValue(f"a {arrow_type} value, got {_describe(value)}")

    return convert


def _list_of(element: Converter, arrow_type: pa.DataType) -> Converter:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, list):
            raise BadValue(f"a list for a {arrow_type} column, got {_describe(value)}")
        return [element(item) for item in value]

    return convert


def _struct_of(members: dict[str, Converter], arrow_type: pa.DataType) -> Converter:
    folded = {fold(name): name for name in members}

    def convert(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise BadValue(f"an object for a {arrow_type} column, got {_describe(value)}")
        result: dict[str, Any] = {}
        keys: dict[str, str] = {}
        for key, item in value.items():
            name = key if key in members else folded.get(fold(str(key)))
            if name is None or item is None:
                continue
            if name in keys:
                raise BadValue(
                    f"an object with one key for member '{name}', got keys '{keys[name]}' and "
                    f"'{key}', which differ only in case (names are compared without case)"
                )
            keys[name] = key
            result[name] = members[name](item)
        return result

    return convert


def _map_of(item: Converter, arrow_type: pa.DataType) -> Converter:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise BadValue(f"an object for a {arrow_type} column, got {_describe(value)}")
        return [(str(key), item(entry)) for key, entry in value.items()]

    return convert


def _by_arrow(arrow_type: pa.DataType) -> Converter:
    """Types with no Python fast path: Arrow's own cast from the value's text decides."""

    def convert(value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, (bool, list, dict)):
            raise BadValue(f"a {arrow_type} value, got {_describe(value)}")
        source = pa.scalar(str(value) if not isinstance(value, str) else value)
        try:
            return source.cast(arrow_type).as_py()
        except (pa.ArrowException, ValueError, OverflowError) as exc:
            raise BadValue(f"a {arrow_type} value, got {_describe(value)}") from exc

    return convert


def _iso_time(arrow_type: pa.DataType) -> Converter:
    """ISO 8601 text to a date or timestamp, as leniently as pyarrow's json and csv parsers.

    A timestamp without an offset is taken as UTC in a zoned column; one with
    an offset is moved to UTC in a column without a zone.
    """
    fallback = _by_arrow(arrow_type)
    is_date = pa.types.is_date(arrow_type)
    zoned = not is_date and arrow_type.tz is not None

    def convert(value: Any) -> Any:
        if not isinstance(value, str):
            return fallback(value)
        try:
            if is_date:
                return datetime.date.fromisoformat(value)
            moment = datetime.datetime.fromisoformat(value)
        except ValueError:
            return fallback(value)
        if zoned and moment.tzinfo is None:
            return moment.replace(tzinfo=datetime.timezone.utc)
        if not zoned and moment.tzinfo is not None:
            return moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return moment

    return convert


def _empty_is_null(convert: Converter) -> Converter:
    def wrapped(value: Any) -> Any:
        if value is None or value == "":
            return None
        return convert(value)

    return wrapped


def _parsed_int(low: int, high: int, arrow_type: pa.DataType) -> Converter:
    def convert(value: Any) -> Any:
        try:
            number = int(value)
        except ValueError:
            raise BadValue(f"a {arrow_type} value, got {_describe(value)}") from None
        if not low <= number <= high:
            raise BadValue(f"a {arrow_type} value, got {_describe(value)} (out of range)")
        return number

    return convert


def _parsed_float(value: Any) -> Any:
    try:
        return float(value)
    except ValueError:
        raise BadValue(f"a double value, got {_describe(value)}") from None


def _describe(value: Any) -> str:
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {text!r}"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float, decimal.Decimal)):
        return f"the number {value}"
    if isinstance(value, (datetime.date, datetime.time)):
        return f"the value {value.isoformat()}"
    kinds: dict[type, str] = {list: "a list", dict: "an object"}
    kind = kinds.get(type(value), type(value).__name__)
    return f"{kind} {json.dumps(value, default=str)[:40]}"
