"""The releases of Spark's operations that the gateway relays, answered by the gateway.

A client reading a reattachable execution (pyspark's and Scala's iterators)
sends a ``ReleaseExecute(release_until)`` after every response it reads, and
one ``release_all`` at the end: most of the calls of a small query. Spark
needs few of them. It keeps an operation's responses until they are released,
but of those it already sent it keeps only the last
``spark.connect.execute.reattachable.observerRetryBufferSize`` (10 MiB by
default), released or not; so a release only frees that buffer sooner, and
the one that matters is ``release_all``, which ends the operation in Spark.

For an operation the gateway relays (an ExecutePlan it forwarded as it came,
reattachable, whose first response named Spark's server-side session), the
gateway answers a ``release_until`` at once, as Spark would (the session's
ids and the operation's), and forwards the next one after it relayed
another ``RELEASE_EVERY_BYTES`` of the operation's responses or
``RELEASE_EVERY_S`` passed, whichever first: on a long or large stream Spark
holds no more than that of what it sent (about what it holds for a client
that releases each response) instead of its whole retry buffer; a small
query's releases never reach it. Every ``release_all`` goes to Spark. Spark
retains every response it was not told to release, and each release the
gateway forwards is one the client sent: a client that reattaches after a
cut stream gets from Spark every response it did not release, as without
the gateway. A ``release_until`` that arrives after the ``release_all`` of
its operation (the client sends them from a pool of threads) is answered
too: Spark ignores those. A release of an operation the gateway does not
relay (of another user or session, unknown, or named with a server-side
session that is not the operation's) goes to Spark, which answers it. The
gateway reads no response's id (that would decode every response, batches
of rows included), so a ``release_until`` naming an id its operation never
sent is answered too, where Spark answers ``INVALID_CURSOR.POSITION_NOT_FOUND``;
the clients send only ids they read, and log a failed release without
acting on it.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.server.detached import Key
from connect_plugin.server.sessions.registry import Session

RELEASE_EVERY_S = 1.0
"""A ``release_until`` of an operation goes to Spark once this many seconds passed since
the last (or since the operation began)..."""
RELEASE_EVERY_BYTES = 4 * 2**20
"""...or once the gateway relayed this many bytes of its responses: Spark's largest
response by default (``spark.connect.grpc.arrow.maxBatchSize``)."""


class _Relayed:
    __slots__ = (
        "forwarded",
        "heard",
        "relayed_bytes",
        "released",
        "released_bytes",
        "server_side",
        "touched",
    )

    def __init__(self, now: float) -> None:
        self.server_side = ""
        self.heard = False
        """Whether a response of the operation was read (for its server-side session)."""
        self.forwarded = now
        """When a release of the operation last went to Spark (or it was forwarded)."""
        self.relayed_bytes = 0
        """Bytes of its responses relayed so far..."""
        self.released_bytes = 0
        """...and when its last release went to Spark."""
        self.released = False
        """Whether the client released all of it."""
        self.touched = now


class RelayedReleases:
    """The operations the gateway relays, by ``Key``, until their session ends or
    ``keep_s`` after the last call that named them (a client that never released all
    of one), and which of their releases Spark gets."""

    def __init__(
        self,
        keep_s: float,
        every_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        every_bytes: int | None = None,
    ) -> None:
        """``every_s``, ``every_bytes``: ``RELEASE_EVERY_S``, ``RELEASE_EVERY_BYTES`` unless
        given."""
        self._keep_s = keep_s
        self._every_s = RELEASE_EVERY_S if every_s is None else every_s
        self._every_bytes = RELEASE_EVERY_BYTES if every_bytes is None else every_bytes
        self._clock = clock
        self._relayed: collections.OrderedDict[Key, _Relayed] = collections.OrderedDict()

    def relaying(self, key: Key) -> Callable[[bytes], None]:
        """An operation forwarded to Spark; what learns its server-side session from the
        responses of its stream."""
        now = self._clock()
        self._forget_before(now - self._keep_s)
        relayed = _Relayed(now)
        self._relayed[key] = relayed
        self._relayed.move_to_end(key)

        def responded(response: bytes) -> None:
            relayed.relayed_bytes += len(response)
            if not relayed.heard:
                relayed.heard = True
                decoded = spark_proto.ExecutePlanResponse.FromString(response)
                relayed.server_side = decoded.server_side_session_id

        return responded

    def reattaching(self, key: Key) -> Callable[[bytes], None] | None:
        """What counts the responses of a stream that reattached to an operation it relays
        (None: not one)."""
        relayed = self._relayed.get(key)
        if relayed is None:
            return None

        def responded(response: bytes) -> None:
            relayed.relayed_bytes += len(response)

        return responded

    def answer(
        self, request: spark_proto.ReleaseExecuteRequest
    ) -> spark_proto.ReleaseExecuteResponse | None:
        """The gateway's answer to a release of an operation it relays, which Spark need not
        hear; None: the release goes to Spark."""
        key = (request.user_context.user_id, request.session_id, request.operation_id)
        relayed = self._relayed.get(key)
        if relayed is None:
            return None
        now = self._clock()
        relayed.touched = now
        self._relayed.move_to_end(key)
        server_side = relayed.server_side
        if not server_side or (
            request.HasField("client_observed_server_side_session_id")
            and request.client_observed_server_side_session_id != server_side
        ):
            return None
        if request.HasField("release_all"):
            relayed.released = True
            return None
        if not relayed.released and (
            now - relayed.forwarded >= self._every_s
            or relayed.relayed_bytes - relayed.released_bytes >= self._every_bytes
        ):
            relayed.forwarded = now
            relayed.released_bytes = relayed.relayed_bytes
            return None
        return spark_proto.ReleaseExecuteResponse(
            session_id=request.session_id,
            server_side_session_id=server_side,
            operation_id=request.operation_id,
        )

    def _forget_before(self, horizon: float) -> None:
        while self._relayed:
            key, oldest = next(iter(self._relayed.items()))
            if oldest.touched >= horizon:
                return
            del self._relayed[key]

    def holds(self, session: Session) -> bool:
        return False

    def let_go(self, session: Session, *, ended: bool) -> None:
        """A session that ended has no operation left to release."""
        if ended:
            for key in [k for k in self._relayed if k[:2] == session.key]:
                del self._relayed[key]

    def __len__(self) -> int:
        return len(self._relayed)
