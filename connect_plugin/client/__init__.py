"""Client side of connect-plugin: plan nodes that build plugin relations.

It runs on the Spark Connect client the user installed (pyspark-client or
full pyspark), which the base package does not bring: without one, importing
it fails with the pip command that does.
"""

from __future__ import annotations

from connect_plugin.extras import require_spark_client

require_spark_client()

from connect_plugin.client.plan import PluginRelation, session_id_of  # noqa: E402
from connect_plugin.client.scan import scan  # noqa: E402
from connect_plugin.client.temp_tables import (  # noqa: E402
    create_temp_table,
    drop_temp_table,
    temp_table,
    temp_tables,
)

__all__ = [
    "PluginRelation",
    "create_temp_table",
    "drop_temp_table",
    "scan",
    "session_id_of",
    "temp_table",
    "temp_tables",
]
