"""The kinds of scan option: how a value is read and where it sits in the ``Scan`` message.

A kind reads an option's value as any route gives it (SQL text, or the
Python value of a ``scan()`` keyword) with errors that name the option,
and moves the value in and out of its field of the plugin's ``Scan``
message. The message is handled through its protobuf descriptor, so the
scan core needs neither the generated module nor pyspark: a field is a
dotted path (``limits.max_rows``), a zero or empty field is an unset
option, and an enum value is its option word after the enum's prefix
(``BAD_RECORD_POLICY_SKIP`` is ``skip``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from connect_plugin.errors import InvalidScanSpec
from connect_plugin.scanning.choices import ScanChoice, boolean, choice, whole_number
from connect_plugin.scanning.formats import ALIASES, Format, format_of


class Kind:
    """A kind of option value: read it, take it from a message, put it in one."""

    def read(self, option: str, value: object) -> Any:
        """``value`` as the model keeps it; ``option`` names it in errors."""
        return value

    def take(self, message: Message, path: str) -> Any:
        """The value at ``path`` of ``message``, or None where the field is unset."""
        holder, name = _field(message, path)
        return getattr(holder, name) or None

    def put(self, message: Message, path: str, value: Any) -> None:
        """Set the field at ``path`` to ``value``; None leaves it unset."""
        if value is not None:
            holder, name = _field(message, path)
            setattr(holder, name, value)

    def words(self) -> str | None:
        """The values as the docs list them (```a`, `b```), for a choice; None otherwise."""
        return None


class Text(Kind):
    """Text such as a column or table name; empty text is no value."""

    def read(self, option: str, value: object) -> str | None:
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise InvalidScanSpec(f"{option} must be text, got {value!r}")
        return value


class Number(Kind):
    """A whole number, or its decimal text; zero in the message means the default."""

    def read(self, option: str, value: object) -> int | None:
        return None if value is None else whole_number(option, value)


class Flag(Kind):
    """``true``/``false``; in the message a bool, or an enum whose value 1 means true."""

    def read(self, option: str, value: object) -> bool:
        return boolean(option, value)

    def take(self, message: Message, path: str) -> bool:
        holder, name = _field(message, path)
        return bool(getattr(holder, name))

    def put(self, message: Message, path: str, value: Any) -> None:
        holder, name = _field(message, path)
        setattr(holder, name, int(value) if _enum(holder, name) else bool(value))


class Choice(Kind):
    """One of an enum's words; in the message an enum whose ``*_UNSPECIFIED`` is no value."""

    def __init__(self, kind: type[ScanChoice]) -> None:
        self.kind = kind

    def read(self, option: str, value: object) -> ScanChoice | None:
        return None if value is None else choice(option, value, self.kind)

    def take(self, message: Message, path: str) -> str | None:
        holder, name = _field(message, path)
        enum = _enum(holder, name)
        assert enum is not None, f"{path} is no enum field"
        word = enum.values_by_number[getattr(holder, name)].name
        word = word.removeprefix(_prefix(enum)).lower()
        return None if word == "unspecified" else word

    def put(self, message: Message, path: str, value: Any) -> None:
        if value is not None:
            holder, name = _field(message, path)
            enum = _enum(holder, name)
            assert enum is not None, f"{path} is no enum field"
            setattr(holder, name, enum.values_by_name[_prefix(enum) + value.value.upper()].number)

    def words(self) -> str:
        return ", ".join(f"`{member.value}`" for member in self.kind)


class FormatName(Kind):
    """A format of the registry, by its name or an alias; in the message its own name."""

    def read(self, option: str, value: object) -> Format | None:
        return None if value is None else format_of(value, option)

    def put(self, message: Message, path: str, value: Any) -> None:
        super().put(message, path, None if value is None else value.value)

    def words(self) -> str:
        aliases = {
            member: "".join(f" (or `{name}`)" for name, own in ALIASES.items() if own is member)
            for member in Format
        }
        return ", ".join(f"`{member.value}`{aliases[member]}" for member in Format)


class Paths(Kind):
    """Paths or globs: one (text or path-like) or a list; in the message a repeated field."""

    def read(self, option: str, value: object) -> tuple[str, ...]:
        if value is None:
            return ()
        if isinstance(value, (str, os.PathLike)):
            value = [value]
        if not isinstance(value, Sequence):
            raise InvalidScanSpec(f"{option} must be a path or a list of paths, got {value!r}")
        return tuple(os.fspath(path) if isinstance(path, os.PathLike) else path for path in value)

    def take(self, message: Message, path: str) -> tuple[str, ...]:
        holder, name = _field(message, path)
        return tuple(getattr(holder, name))

    def put(self, message: Message, path: str, value: Any) -> None:
        if value:
            holder, name = _field(message, path)
            getattr(holder, name).extend(value)


class Columns(Kind):
    """The projection: names, or text ``'a, b'``; ``*`` is every column, ``[]`` none.

    In the message the names are a repeated field, and every column is the
    flag ``wildcard`` beside it.
    """

    wildcard = "wildcard"

    def read(self, option: str, value: object) -> tuple[str, ...] | None:
        if value is None:
            return None
        if isinstance(value, str):
            names = column_list(option, value)
        elif isinstance(value, Sequence):
            names = tuple(value)
        else:
            raise InvalidScanSpec(f"{option} must be a list of column names, got {value!r}")
        return None if names == ("*",) else names

    def take(self, message: Message, path: str) -> tuple[str, ...] | None:
        holder, name = _field(message, path)
        return None if getattr(holder, self.wildcard) else tuple(getattr(holder, name))

    def put(self, message: Message, path: str, value: Any) -> None:
        holder, name = _field(message, path)
        if value is None:
            setattr(holder, self.wildcard, True)
        else:
            getattr(holder, name).extend(value)


class Schema(Kind):
    """The provided schema: DDL text (only Spark parses it), an Arrow schema, or a Spark
    ``DataType`` message; in the message the DDL field, or the ``DataType`` field beside it."""

    data_type = "schema"

    def read(self, option: str, value: object) -> str | pa.Schema | Message | None:
        if value is None or value == "":
            return None
        if not isinstance(value, (str, pa.Schema, Message)):
            raise InvalidScanSpec(
                f"{option} must be DDL text or a pyarrow.Schema, got {type(value).__name__}"
            )
        return value

    def take(self, message: Message, path: str) -> str | Message | None:
        holder, name = _field(message, path)
        if holder.HasField(self.data_type):
            data_type: Message = getattr(holder, self.data_type)
            return data_type
        return getattr(holder, name) if holder.HasField(name) else None

    def put(self, message: Message, path: str, value: Any) -> None:
        holder, name = _field(message, path)
        if isinstance(value, str):
            setattr(holder, name, value)
        elif isinstance(value, Message):
            getattr(holder, self.data_type).CopyFrom(value)
        elif value is not None:
            raise InvalidScanSpec(
                "an Arrow schema travels in the Scan message as a Spark DataType; convert it first"
            )


def column_list(option: str, text: str) -> tuple[str, ...]:
    """``'a, b, columns[1]'`` as names; ``'*'`` is the wildcard, empty text no columns."""
    if not text.strip():
        return ()
    names = tuple(name.strip() for name in text.split(","))
    if any(not name for name in names):
        raise InvalidScanSpec(f"{option} has an empty name in {text!r}; separate names by commas")
    return names


def _field(message: Message, path: str) -> tuple[Any, str]:
    """The message that holds the last field of a dotted path, and that field's name."""
    *parents, name = path.split(".")
    holder: Any = message
    for parent in parents:
        holder = getattr(holder, parent)
    return holder, name


def _enum(holder: Message, name: str) -> EnumDescriptor | None:
    described: FieldDescriptor = holder.DESCRIPTOR.fields_by_name[name]
    enum: EnumDescriptor | None = described.enum_type
    return enum


def _prefix(enum: EnumDescriptor) -> str:
    """``BadRecordPolicy`` -> ``BAD_RECORD_POLICY_``: the prefix of every value of a plugin enum."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", enum.name).upper() + "_"
