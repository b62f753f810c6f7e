"""Finding plugin messages inside Spark Connect requests.

The gateway parses a request only as far as it needs to: it walks the message
tree for ``extension`` fields (``google.protobuf.Any`` on Relation, Expression
and Command), and reports each one with the path that leads to it, so a later
rewrite can replace exactly that node and keep its ``plan_id``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from google.protobuf.any_pb2 import Any as AnyProto
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from pyspark.sql.connect import proto as spark_proto

from connect_plugin import proto
from connect_plugin.errors import SessionMismatch, UnknownExtension

PLUGIN_MESSAGES: dict[str, type[Message]] = {
    cls.DESCRIPTOR.full_name: cls
    for cls in (
        proto.CreateTempTableAsSelect,
        proto.DropTempTable,
        proto.ListTempTables,
        proto.ReadTempTable,
        proto.Scan,
    )
}

_TYPE_MESSAGE = FieldDescriptor.TYPE_MESSAGE
_EXTENSION_HOLDERS = frozenset(
    ("spark.connect.Relation", "spark.connect.Expression", "spark.connect.Command")
)


@dataclass(frozen=True)
class FoundExtension:
    """One extension in a request: its holder node and the unpacked plugin message."""

    holder: Message
    type_name: str
    message: Message


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


def _walk_extensions(message: Message) -> Iterator[tuple[Message, AnyProto]]:
    if message.DESCRIPTOR.full_name in _EXTENSION_HOLDERS and message.HasField("extension"):
        yield message, message.extension  # type: ignore[attr-defined]
        return
    for child in _children(message):
        yield from _walk_extensions(child)


def walk_relations(message: Message) -> Iterator[spark_proto.Relation]:
    """Every Spark ``Relation`` inside ``message``, parents before their inputs."""
    if isinstance(message, spark_proto.Relation):
        yield message
    for child in _children(message):
        yield from walk_relations(child)


def find_extensions(
    request: Message, *, session_id: str, forwarded_prefixes: tuple[str, ...] = ()
) -> list[FoundExtension]:
    """Every plugin message in ``request``, checked against the request's session.

    Extensions whose type name starts with one of ``forwarded_prefixes`` belong
    to other server-side plugins and are left for Spark. Anything else that is
    not ours is refused by name, so a client never gets a confusing error from
    deep inside Spark for a message the gateway should have handled.
    """
    found: list[FoundExtension] = []
    for holder, packed in _walk_extensions(request):
        name = type_name_of(packed)
        if name.startswith(forwarded_prefixes) and forwarded_prefixes:
            continue
        cls = PLUGIN_MESSAGES.get(name)
        if cls is None:
            raise UnknownExtension(
                f"the plan holds an extension message of type [{name}] that this "
                "connect-plugin gateway does not know; known: "
                + ", ".join(sorted(PLUGIN_MESSAGES))
            )
        message = cls()
        packed.Unpack(message)
        message_session = getattr(message, "session_id", "")
        if message_session != session_id:
            raise SessionMismatch(
                f"a [{name}] message for session [{message_session}] was sent in "
                f"session [{session_id}]; plugin messages may only act on their own session"
            )
        found.append(FoundExtension(holder=holder, type_name=name, message=message))
    return found
