"""Session temporary tables and a schema-on-read scan framework for Spark Connect.

The client functions are imported on first use, so the processes that only
run the scan framework (Spark's Python workers) never load the Spark
Connect client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connect_plugin.client.scan import scan
    from connect_plugin.client.temp_tables import (
        create_temp_table,
        drop_temp_table,
        temp_table,
        temp_tables,
    )

__version__ = "0.1.0"

__all__ = ["create_temp_table", "drop_temp_table", "scan", "temp_table", "temp_tables"]

_CLIENT_FUNCTIONS = frozenset(
    ("create_temp_table", "drop_temp_table", "scan", "temp_table", "temp_tables")
)


def __getattr__(name: str) -> Any:
    if name in _CLIENT_FUNCTIONS:
        return getattr(importlib.import_module("connect_plugin.client"), name)
    raise AttributeError(f"module 'connect_plugin' has no attribute {name!r}")
