"""What the gateway knows of the SparkConnectService it forwards, from its descriptor.

Which methods can hold a plan (so RPCs added upstream are covered without code
changes), each method's message classes and call kind, the upstream callable
of a method on a channel, and which of a client's metadata goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import grpc
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from pyspark.sql.connect.proto import base_pb2

from connect_plugin.errors import ConnectPluginError

SERVICE = base_pb2.DESCRIPTOR.services_by_name["SparkConnectService"]
SERVICE_NAME = SERVICE.full_name

_HOP_BY_HOP_METADATA = frozenset(
    ("user-agent", "te", "content-type", "grpc-accept-encoding", "authorization")
)
"""Never forwarded: the transport's own headers, and the client's credentials for the gateway
(the upstream's, if any, come from the gateway's channel)."""
_CALL_KINDS = {
    (False, False): "unary_unary",
    (False, True): "unary_stream",
    (True, False): "stream_unary",
    (True, True): "stream_stream",
}


def plan_methods() -> tuple[str, ...]:
    """The service methods whose requests can hold a plan (and so plugin messages)."""
    return tuple(
        method.name
        for method in SERVICE.methods
        if not method.client_streaming and _holds_plan(method.input_type)
    )


def _holds_plan(descriptor: Descriptor, seen: set[str] | None = None) -> bool:
    """Whether messages of this type can contain a ``spark.connect.Plan``."""
    seen = set() if seen is None else seen
    if descriptor.full_name == "spark.connect.Plan":
        return True
    if descriptor.full_name in seen:
        return False
    seen.add(descriptor.full_name)
    return any(
        field.type == FieldDescriptor.TYPE_MESSAGE and _holds_plan(field.message_type, seen)
        for field in descriptor.fields
    )


def forwardable_metadata(
    metadata: Sequence[tuple[str, str | bytes]] | None,
) -> tuple[tuple[str, str | bytes], ...]:
    """Client metadata minus the transport's own headers."""
    if not metadata:
        return ()
    return tuple(
        (key, value)
        for key, value in metadata
        if key not in _HOP_BY_HOP_METADATA and not key.startswith((":", "grpc-"))
    )


def message_class(descriptor: Descriptor) -> type[Message]:
    """The generated class of a service message type (made from the descriptor if pyspark
    has none)."""
    found: type[Message] | None = getattr(base_pb2, descriptor.name, None)
    return found or GetMessageClass(descriptor)


def call_kind(method: MethodDescriptor) -> str:
    """The name of the channel's callable for this method (``unary_stream`` ...)."""
    return _CALL_KINDS[(method.client_streaming, method.server_streaming)]


class UpstreamMethod:
    """One method's upstream callable: on the fixed channel, or made per routed channel."""

    def __init__(self, path: str, kind: str, channel: grpc.aio.Channel | None) -> None:
        self._path = path
        self._kind = kind
        self._fixed = None if channel is None else getattr(channel, kind)(path)

    @property
    def fixed(self) -> Callable[..., Any]:
        if self._fixed is None:
            raise ConnectPluginError("the gateway has no upstream channel and no route")
        fixed: Callable[..., Any] = self._fixed
        return fixed

    def on(self, channel: grpc.aio.Channel) -> Callable[..., Any]:
        made: Callable[..., Any] = getattr(channel, self._kind)(self._path)
        return made
