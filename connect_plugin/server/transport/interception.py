"""What the gateway's hooks and observers tell the forwarder of each call.

The forwarder (``forwarding``) relays every RPC; the rest of the gateway
takes part through these contracts: a ``RequestHook`` returns an
``Interception`` for a request it handles (a replaced request, an answer,
extra responses, a follow-up once the upstream call succeeded), the
``CallObserver`` and ``CallMetrics`` see each call, and ``Admission``,
``Authentication`` and ``Refusal`` decide and hear which calls go no further.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import grpc
from google.protobuf.message import Message

from connect_plugin.server.transport.spark_status import Status

if TYPE_CHECKING:
    from prometheus_client import Gauge

Token = TypeVar("Token")


class CallObserver(Protocol[Token]):
    """Sees every call that names a session: its start, end, errors and responses.

    ``begin`` returns a token for the call (None: not watched), which the
    forwarder hands back on every later event of the same call. The forwarder
    calls it on the hot path of every RPC, so it must be cheap;
    ``tracks_responses`` says whether the first response of a call is worth
    decoding for ``responded``.
    """

    def begin(self, request: Message) -> Token | None: ...

    def end(self, token: Token) -> None: ...

    def tracks_responses(self, token: Token) -> bool: ...

    def responded(self, token: Token, server_side_session_id: str) -> None: ...

    def failed(self, token: Token, error: grpc.aio.AioRpcError) -> None: ...


class CallMetrics(Protocol):
    """What the forwarder counts of each call: the gateway's Prometheus metrics
    (``monitoring.metrics``), handed in from above. Those metrics read the session registry,
    which stands on this transport, so the forwarder names only what it calls of them.
    """

    @property
    def active_streams(self) -> Gauge: ...

    def finished(self, method: str, code: str, seconds: float) -> None: ...

    def sent_upstream(self, method: str, request: object) -> None: ...

    def sent_to_client(self, response: bytes) -> None: ...

    def upstream_failed(self, error: grpc.aio.AioRpcError) -> None: ...


@dataclass(frozen=True)
class Interception:
    """What the gateway does with a request instead of forwarding it as it came.

    ``prepare`` (streaming methods) runs first and may yield extra responses
    for the client, such as progress, and last the ``Interception`` that takes
    this one's place for the rest of the call (what the work it ran decided:
    the request to forward, or the answer, the follow-up...); ``request``
    replaces the client's request upstream; ``answer`` replies without asking
    upstream at all; ``finish`` runs once the upstream call has succeeded,
    before the client gets the stream's last response (a client acts on
    Spark's ``ResultComplete`` without waiting for the stream to end, so its
    next request must find the follow-up done);
    ``respond`` (methods with one response) turns the upstream's response
    into the one the client gets; ``failed`` is told of the upstream's error
    when the upstream call fails (``finish`` then never runs); ``responses``
    (streaming methods) sees each upstream response, as bytes, before the
    client gets it.
    """

    request: Message | None = None
    answer: Message | None = None
    prepare: Callable[[], AsyncIterator[Message | Interception]] | None = None
    finish: Callable[[], Awaitable[None]] | None = None
    respond: Callable[[bytes], bytes] | None = None
    failed: Callable[[grpc.aio.AioRpcError], None] | None = None
    failure: Callable[[Status], Status] | None = None
    """Turns the status of the upstream's error, as the client would get it, into the one it
    gets (what the gateway knows of the request that Spark's text does not say)."""
    responses: Callable[[bytes], None] | None = None
    unfinished: Callable[[], None] | None = None
    """(executions that may be reattached to) told instead of running ``finish`` when the
    stream ends before the execution did (the client's stream ended, Spark's ended without
    ``ResultComplete``, or failed): the execution may go on upstream, and the stream that
    reattaches to it and sees it end is to run ``finish``."""
    answered: Sequence[Message] = ()
    """(streaming methods, given by ``prepare``) the responses that answer the call without
    asking upstream; ``finish`` runs before the last of them."""


RequestHook = Callable[[str, Message, Any], Awaitable["Interception | None"]]
"""Called with (method name, decoded request, context) before a request is
forwarded; raises a ``ConnectPluginError`` to refuse it."""

Admission = Callable[[Message], bool]
"""Called with every decoded request before anything else sees it; raises a
``ConnectPluginError`` to refuse it, returns False for a request Spark refuses by
itself, which then goes to Spark untouched by hooks and observer."""

Authentication = Callable[[Sequence[tuple[str, "str | bytes"]]], str]
"""Called with a call's metadata before its request is read; returns the caller's user id
or raises ``Unauthenticated``."""

Refusal = Callable[[str, BaseException, "Message | None"], None]
"""Told of each call the gateway refuses itself: (method, reason, decoded request if any)."""
