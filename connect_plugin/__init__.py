"""Session temporary tables and a schema-on-read scan framework for Spark Connect."""

from __future__ import annotations

from connect_plugin import scan
from connect_plugin.client import create_temp_table, drop_temp_table, temp_table, temp_tables

__version__ = "0.1.0"

__all__ = ["create_temp_table", "drop_temp_table", "scan", "temp_table", "temp_tables"]
