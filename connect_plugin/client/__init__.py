"""Client side of connect-plugin: plan nodes that build plugin relations."""

from __future__ import annotations

from connect_plugin.client.plan import PluginRelation, session_id_of

__all__ = ["PluginRelation", "session_id_of"]
