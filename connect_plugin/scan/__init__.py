"""Scan framework: Arrow batch building and schema-on-read file scans.

Pure Python and pyarrow: nothing here imports pyspark or grpc.
"""

from __future__ import annotations

from connect_plugin.scan.column_writers import ColumnWriter
from connect_plugin.scan.loader import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ROWS,
    MAX_ROWS_CEILING,
    ResultSetLoader,
)
from connect_plugin.scan.row_writer import RowWriter

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ROWS",
    "MAX_ROWS_CEILING",
    "ColumnWriter",
    "ResultSetLoader",
    "RowWriter",
]
