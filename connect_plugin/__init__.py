"""Session temporary tables and a schema-on-read scan framework for Spark Connect."""

from __future__ import annotations

__version__ = "0.1.0"
