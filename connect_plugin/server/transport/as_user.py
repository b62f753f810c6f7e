"""Requests re-sent as the user the gateway authenticated, whatever the client claimed."""

from __future__ import annotations

from collections.abc import AsyncIterator

from google.protobuf.message import Message

from connect_plugin.errors import PlanError
from connect_plugin.server.transport.plans import decode as decode_request

UNDECODABLE = "the request cannot be decoded as a Spark Connect message"


def assign_user(message: Message, user_id: str) -> None:
    """Make ``user_id`` the request's user, whatever the client claimed."""
    if "user_context" in message.DESCRIPTOR.fields_by_name:
        message.user_context.user_id = user_id  # type: ignore[attr-defined]


class ReassignedChunks:
    """A client stream of requests (AddArtifacts), each re-sent as ``user_id``'s.

    An undecodable chunk ends the stream with an error (the upstream call is
    cancelled) and sets ``undecodable``, so the client learns why.
    """

    def __init__(self, chunks: AsyncIterator[bytes], chunk_type: type[Message], user_id: str):
        self._chunks = chunks
        self._chunk_type = chunk_type
        self._user_id = user_id
        self.undecodable = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._reassigned()

    async def _reassigned(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            message = decode_request(self._chunk_type, chunk)
            if message is None:
                self.undecodable = True
                raise PlanError(UNDECODABLE)
            assign_user(message, self._user_id)
            yield message.SerializeToString()
