"""The connect-plugin gateway: a Spark Connect server that forwards to Spark."""

from __future__ import annotations

from connect_plugin.server.gateway import Gateway, serve

__all__ = ["Gateway", "serve"]
