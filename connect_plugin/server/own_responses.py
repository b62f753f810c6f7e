"""Responses the gateway makes itself, in the shape Spark would send them.

The gateway answers a statement it ran itself as Spark answers a SQL
command (its rows in a ``LocalRelation``, then ``ResultComplete``), answers
a DataFrame's read-back of those rows as Spark answers a query of them, and
relays the progress of its own work as ``execution_progress`` responses.
Every response id it makes starts with ``SYNTHETIC_RESPONSE_PREFIX``: the
client acknowledges responses with ReleaseExecute and may name one in
ReattachExecute, and the gateway must answer or strip those itself, since
Spark never sent them.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.types import pyspark_types_to_proto_types
from pyspark.sql.pandas.types import from_arrow_schema

from connect_plugin.server.sessions.registry import Session, SessionRegistry

SYNTHETIC_RESPONSE_PREFIX = "connect-plugin-progress-"
ANSWERS_KEPT = 16
"""Statement results per session whose read-back the gateway answers itself."""


class OwnResponses:
    """The responses the gateway makes for the sessions of ``sessions``.

    It keeps, with each session's object, the Arrow data of the last
    ``ANSWERS_KEPT`` statement results it answered itself, whose read-back it
    answers too: the registry's part (``SessionPart``) for them.
    """

    def __init__(self, sessions: SessionRegistry) -> None:
        self._sessions = sessions
        self._answered: dict[Session, deque[bytes]] = {}
        sessions.add_part(self)

    def holds(self, session: Session) -> bool:
        return False

    def let_go(self, session: Session, *, ended: bool) -> None:
        self._answered.pop(session, None)

    def _answering(
        self, request: spark_proto.ExecutePlanRequest, kinds: Sequence[str]
    ) -> tuple[Session, list[spark_proto.ExecutePlanResponse]] | None:
        """The session and empty responses of ``kinds`` with which the gateway answers
        ``request`` itself; None while the session's server-side id is unknown."""
        session = self._sessions.find(request.user_context.user_id, request.session_id)
        if session is None or not session.server_side_session_id or not request.operation_id:
            return None
        responses = []
        for kind in kinds:
            response = spark_proto.ExecutePlanResponse(
                session_id=request.session_id,
                server_side_session_id=session.server_side_session_id,
                operation_id=request.operation_id,
                response_id=SYNTHETIC_RESPONSE_PREFIX + str(uuid.uuid4()),
            )
            getattr(response, kind).SetInParent()
            responses.append(response)
        return session, responses

    def command_answer(
        self, request: spark_proto.ExecutePlanRequest, result: spark_proto.Relation
    ) -> tuple[spark_proto.ExecutePlanResponse, ...]:
        """Spark's answer to a SQL command, with ``result`` as its rows: the command's result,
        then ``ResultComplete``."""
        answering = self._answering(request, ("sql_command_result", "result_complete"))
        if answering is None:
            return ()
        session, responses = answering
        responses[0].sql_command_result.relation.CopyFrom(result)
        kept = self._answered.setdefault(session, deque(maxlen=ANSWERS_KEPT))
        kept.append(result.local_relation.data)
        return tuple(responses)

    def read_back(
        self, request: spark_proto.ExecutePlanRequest
    ) -> tuple[spark_proto.ExecutePlanResponse, ...]:
        """Spark's answer to a query of a statement result the gateway answered (a client's
        DataFrame reading its rows back): the schema, the rows, then ``ResultComplete``."""
        plan = request.plan
        if not plan.HasField("root") or plan.root.WhichOneof("rel_type") != "local_relation":
            return ()
        local = plan.root.local_relation
        session = self._sessions.find(request.user_context.user_id, request.session_id)
        answered = () if session is None else self._answered.get(session, ())
        if session is None or local.HasField("schema") or local.data not in answered:
            return ()
        rows = pa.ipc.open_stream(local.data).read_all()
        answering = self._answering(request, ("schema", "arrow_batch", "result_complete"))
        if answering is None or not rows.num_rows:
            return ()
        _, responses = answering
        responses[0].schema.CopyFrom(pyspark_types_to_proto_types(from_arrow_schema(rows.schema)))
        responses[1].arrow_batch.row_count = rows.num_rows
        responses[1].arrow_batch.data = local.data
        return tuple(responses)

    def progress(
        self,
        request: spark_proto.ExecutePlanRequest | spark_proto.ReattachExecuteRequest,
        upstream: spark_proto.ExecutePlanResponse,
    ) -> spark_proto.ExecutePlanResponse:
        """The progress of the gateway's own work (``upstream``, from the Spark job it ran) as
        a response to ``request``; the session learns its server-side id from it."""
        session = self._sessions.find(request.user_context.user_id, request.session_id)
        known = upstream.server_side_session_id
        if session is not None and not session.server_side_session_id and known:
            self._sessions.record_server_side_session(session, known)
        response = spark_proto.ExecutePlanResponse(
            session_id=request.session_id,
            server_side_session_id=upstream.server_side_session_id,
            operation_id=request.operation_id,
            response_id=SYNTHETIC_RESPONSE_PREFIX + str(uuid.uuid4()),
        )
        response.execution_progress.CopyFrom(upstream.execution_progress)
        return response
