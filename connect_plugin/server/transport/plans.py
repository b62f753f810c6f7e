"""Decoding requests of any depth Spark accepts, and finding plugin messages in them.

protobuf's Python runtime stops decoding at 100 nested messages, which an
ordinary loop of ``withColumn`` calls passes at about 48 relations. Spark
itself accepts plans up to its marshaller's limit (1024 levels by default),
so the gateway decodes a request the fast way first and, only when that
fails, measures its nesting on the wire (schema-aware, without recursion)
and decodes it again with the runtime's depth limit lifted if it is no
deeper than Spark accepts. A deeper request is forwarded undecoded, for
Spark to refuse; the lifted limit is never used on bytes that were not
measured, since the runtime's decoder recurses on the C stack.

The message tree is then walked without recursion for ``extension`` fields
(``google.protobuf.Any`` on Relation, Expression and Command); each one is
reported with its holder, so a rewrite can replace exactly that node and
keep its ``plan_id``.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from google.protobuf.any_pb2 import Any as AnyProto
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.internal import api_implementation
from google.protobuf.message import DecodeError, Message
from pyspark.sql.connect import proto as spark_proto

MAX_PLAN_DEPTH = 1024
"""Nesting Spark accepts by default (``spark.connect.grpc.marshallerRecursionLimit``)."""

_TYPE_MESSAGE = FieldDescriptor.TYPE_MESSAGE
_HOLDER_KINDS: dict[object, str] = {
    spark_proto.Relation.DESCRIPTOR: "relation",
    spark_proto.Expression.DESCRIPTOR: "expression",
    spark_proto.Command.DESCRIPTOR: "command",
}
_PATHS: dict[tuple[frozenset[object], object], frozenset[object]] = {}
"""Per set of target types and message type, the fields that can lead to a target
(computed once)."""
_HOLDERS = frozenset(_HOLDER_KINDS)
M = TypeVar("M", bound=Message)


def _depth_switch() -> Callable[[bool], None] | None:
    """Turns the runtime's decoding depth limit off and on again; None if it cannot."""
    if api_implementation.Type() == "upb":
        upb: object = importlib.import_module("google._upb._message")
        switch: Callable[[bool], None] = getattr(upb, "SetAllowOversizeProtos")  # noqa: B009
        return switch
    if api_implementation.Type() == "python":
        decoder = importlib.import_module("google.protobuf.internal.decoder")
        default = decoder.DEFAULT_RECURSION_LIMIT

        def python_switch(deep: bool) -> None:
            decoder.SetRecursionLimit(MAX_PLAN_DEPTH + 1 if deep else default)

        return python_switch
    return None


_SWITCH = _depth_switch()


@contextlib.contextmanager
def deep_messages() -> Iterator[None]:
    """Lift the runtime's depth limit for synchronous work on messages already measured.

    The runtime re-parses a message it copies (``CopyFrom``, constructors),
    so building a Spark request around a deep client relation needs this
    too. Never hold it across an ``await``: other requests decode meanwhile.
    """
    if _SWITCH is None:
        yield
        return
    _SWITCH(True)
    try:
        yield
    finally:
        _SWITCH(False)


def decode(message_type: type[M], data: bytes) -> M | None:
    """``data`` decoded as ``message_type``; None when malformed or deeper than Spark accepts."""
    try:
        return message_type.FromString(data)
    except DecodeError:
        pass
    descriptor: Descriptor = message_type.DESCRIPTOR  # type: ignore[assignment]
    depth = nesting_depth(data, descriptor, MAX_PLAN_DEPTH)
    if depth is None or _SWITCH is None:
        return None
    with deep_messages():
        try:
            return message_type.FromString(data)
        except DecodeError:
            return None


def unpack(packed: AnyProto, message_type: type[M]) -> M | None:
    """The message an ``Any`` holds, decoded like a request; None when it is not one."""
    if not packed.Is(message_type.DESCRIPTOR):
        return None
    return decode(message_type, packed.value)


def nesting_depth(data: bytes, descriptor: Descriptor, limit: int) -> int | None:
    """How deep messages nest in ``data``; None when malformed or deeper than ``limit``.

    Walks the wire format with an explicit stack, following only fields the
    schema declares as messages (bytes and strings are skipped whole). Every
    read stays inside the message it belongs to and a nested message must fit
    in its parent, so each byte is read once and any input ends the walk.
    """
    stack: list[tuple[Descriptor | None, int]] = [(descriptor, len(data))]
    position, deepest = 0, 1
    while stack:
        owner, end = stack[-1]
        if position == end:
            stack.pop()
            continue
        found = _field_at(data, position, end)
        if found is None:
            return None
        number, wire_type, start, after = found
        field = owner.fields_by_number.get(number) if owner is not None else None
        if wire_type == _LENGTH_DELIMITED and field is not None and field.type == _TYPE_MESSAGE:
            stack.append((field.message_type, after))
            deepest = max(deepest, len(stack))
            if deepest > limit:
                return None
            position = start
        else:
            position = after
    return deepest


def top_level_fields(data: bytes, numbers: frozenset[int]) -> dict[int, bytes]:
    """The length-delimited top-level fields of ``data`` numbered in ``numbers`` (the last
    of each), found without decoding the others: each other field is skipped whole, so the
    cost is one step per top-level field, whatever its size. Empty when malformed."""
    found: dict[int, bytes] = {}
    position, end = 0, len(data)
    while position < end:
        field = _field_at(data, position, end)
        if field is None:
            return {}
        number, wire_type, start, after = field
        if wire_type == _LENGTH_DELIMITED and number in numbers:
            found[number] = data[start:after]
        position = after
    return found


_LENGTH_DELIMITED = 2


def _field_at(data: bytes, position: int, end: int) -> tuple[int, int, int, int] | None:
    """The field whose key is at ``position``: its number, its wire type, and where its
    value starts and ends (a length-delimited value's payload); None when it is malformed
    or runs past ``end``."""
    key, position = _varint(data, position, end)
    if position < 0:
        return None
    wire_type, number = key & 7, key >> 3
    if wire_type == 0:
        _, after = _varint(data, position, end)
    elif wire_type == 1:
        after = position + 8
    elif wire_type == 5:
        after = position + 4
    elif wire_type == _LENGTH_DELIMITED:
        length, position = _varint(data, position, end)
        after = position + length
    else:
        return None
    if position < 0 or after < 0 or after > end:
        return None
    return number, wire_type, position, after


_MAX_VARINT_BYTES = 10


def _varint(data: bytes, position: int, end: int) -> tuple[int, int]:
    """The varint at ``position``, read no further than ``end``, and the position after it.

    The position is -1 when the varint runs past ``end`` or is longer than
    the 10 bytes of a 64-bit value.
    """
    if position < 0:
        return 0, -1
    value, shift = 0, 0
    stop = min(end, position + _MAX_VARINT_BYTES)
    while position < stop:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
    return 0, -1


@dataclass(frozen=True)
class Extension:
    """One ``extension`` field in a request: its holder node, where it sits, what it holds."""

    holder: Message
    kind: str
    """``relation``, ``expression`` or ``command``: the type of the holder."""
    packed: AnyProto

    @property
    def type_name(self) -> str:
        return type_name_of(self.packed)


def type_name_of(any_message: AnyProto) -> str:
    """The full protobuf name an ``Any`` claims to hold."""
    return any_message.type_url.rpartition("/")[2]


def _children(message: Message) -> Iterator[Message]:
    """The messages set directly inside ``message``, map values included."""
    for field, value in message.ListFields():
        if field.type != _TYPE_MESSAGE:
            continue
        if field.is_repeated:
            if field.message_type.GetOptions().map_entry:
                if field.message_type.fields_by_name["value"].type == _TYPE_MESSAGE:
                    yield from value.values()
                continue
            yield from value
        else:
            yield value


def _paths(descriptor: Descriptor, targets: frozenset[object] = _HOLDERS) -> frozenset[object]:
    """The message fields of ``descriptor`` through which a Relation, Expression or Command
    can be reached; a walk skips every other field (literals, types, options...)."""
    found = _PATHS.get((targets, descriptor))
    if found is not None:
        return found
    reaches: dict[object, bool] = {}
    pending: list[Descriptor] = [descriptor]
    graph: dict[object, list[FieldDescriptor]] = {}
    while pending:
        current = pending.pop()
        if current in graph:
            continue
        fields = [f for f in current.fields if f.type == _TYPE_MESSAGE]
        graph[current] = fields
        pending.extend(f.message_type for f in fields if f.message_type not in graph)
    for kind in graph:
        reaches[kind] = kind in targets
    changed = True
    while changed:
        changed = False
        for kind, fields in graph.items():
            if not reaches[kind] and any(reaches[f.message_type] for f in fields):
                reaches[kind] = changed = True
    for kind, fields in graph.items():
        _PATHS.setdefault((targets, kind), frozenset(f for f in fields if reaches[f.message_type]))
    return _PATHS[(targets, descriptor)]


def extensions(message: Message) -> list[Extension]:
    """Every ``extension`` in ``message``'s tree in document order, not looking into them."""
    found: list[Extension] = []
    pending = [message]
    while pending:
        current = pending.pop()
        descriptor = current.DESCRIPTOR
        kind = _HOLDER_KINDS.get(descriptor)
        if kind is not None and current.HasField("extension"):
            found.append(Extension(current, kind, current.extension))  # type: ignore[attr-defined]
            continue
        paths = _paths(descriptor)  # type: ignore[arg-type]
        children: list[Message] = []
        for field, value in current.ListFields():
            if field not in paths:
                continue
            if not field.is_repeated:
                children.append(value)
            elif field.message_type.GetOptions().map_entry:
                children.extend(value.values())
            else:
                children.extend(value)
        children.reverse()
        pending.extend(children)
    return found


def plan_nodes(message: Message, *kinds: type[Message]) -> Iterator[Message]:
    """Every message of the types ``kinds`` in ``message``'s tree (by default Relation,
    Expression and Command).

    Only fields that can lead to one are followed, so literals, schemas and
    the data of local relations are never visited (nor expressions, when no
    expression can hold one of ``kinds``).
    """
    targets = frozenset(k.DESCRIPTOR for k in kinds) if kinds else _HOLDERS
    pending = [message]
    while pending:
        current = pending.pop()
        if current.DESCRIPTOR in targets:
            yield current
        paths = _paths(current.DESCRIPTOR, targets)  # type: ignore[arg-type]
        for field, value in current.ListFields():
            if field not in paths:
                continue
            if not field.is_repeated:
                pending.append(value)
            elif field.message_type.GetOptions().map_entry:
                pending.extend(value.values())
            else:
                pending.extend(value)


def walk_relations(message: Message) -> Iterator[spark_proto.Relation]:
    """Every Spark ``Relation`` inside ``message``, parents before their inputs."""
    pending = [message]
    while pending:
        current = pending.pop()
        if isinstance(current, spark_proto.Relation):
            yield current
        pending.extend(reversed(list(_children(current))))


def replace_node(holder: spark_proto.Relation, result: spark_proto.Relation) -> None:
    """Put ``result`` where ``holder`` was, keeping the node's plan id."""
    common = spark_proto.RelationCommon()
    had_common = holder.HasField("common")
    if had_common:
        common.CopyFrom(holder.common)
    holder.CopyFrom(result)
    if had_common:
        holder.common.CopyFrom(common)
