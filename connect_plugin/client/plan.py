"""The base of every plugin plan node on the client.

A node is an ordinary ``pyspark.sql.connect.plan.LogicalPlan``, so the result
is a plain Spark Connect DataFrame; it only packs its plugin message into
``Relation.extension`` and stamps it with the id of the session that sends it.
Works on full pyspark and on the thin ``pyspark-client`` alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from google.protobuf.message import Message
from pyspark.sql.connect.plan import LogicalPlan

if TYPE_CHECKING:
    from pyspark.sql.connect import proto as spark_proto
    from pyspark.sql.connect.client import SparkConnectClient


def session_id_of(client: SparkConnectClient) -> str:
    """The Spark Connect session id a client sends with every request."""
    session_id: str = client._session_id
    return session_id


class PluginRelation(LogicalPlan):
    """A plan node whose relation is one plugin message in ``Relation.extension``."""

    def __init__(self, child: Any = None) -> None:
        super().__init__(child)

    def to_plugin_message(self, client: SparkConnectClient) -> Message:
        """The plugin message of this node, stamped with ``session_id_of(client)``."""
        raise NotImplementedError(f"{type(self).__name__} must build its plugin message")

    def plan(self, session: SparkConnectClient) -> spark_proto.Relation:
        relation = self._create_proto_relation()
        relation.extension.Pack(self.to_plugin_message(session))
        return relation

