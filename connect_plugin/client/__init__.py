"""Client side of connect-plugin: plan nodes that build plugin relations."""

from __future__ import annotations

from connect_plugin.client.plan import PluginRelation, session_id_of
from connect_plugin.client.scan import scan
from connect_plugin.client.temp_tables import (
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
