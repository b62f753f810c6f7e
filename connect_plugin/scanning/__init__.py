"""Scan framework: Arrow batch building and schema-on-read file scans.

Pure Python and pyarrow: nothing here imports pyspark or grpc, except
``connect_plugin.scanning.spark.spark_source``, which binds the scan to Spark as a
Python data source and is imported only where Spark runs it.
"""

from __future__ import annotations

from connect_plugin.scanning.choices import Compression, Evolution, OnError, Partitioning
from connect_plugin.scanning.formats import Format
from connect_plugin.scanning.loader.column_writers import ColumnWriter
from connect_plugin.scanning.loader.loader import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ROWS,
    MAX_ROWS_CEILING,
    ResultSetLoader,
)
from connect_plugin.scanning.loader.loader_state import LoaderState
from connect_plugin.scanning.loader.row_writer import RowWriter
from connect_plugin.scanning.planning.plan import ScanPlan, clear_schema_cache, plan_scan
from connect_plugin.scanning.planning.pruning import PartitionFilter, prune
from connect_plugin.scanning.reading.scanner import ScanReader
from connect_plugin.scanning.request.options import ScanOptions
from connect_plugin.scanning.request.spec import ScanSpec

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ROWS",
    "MAX_ROWS_CEILING",
    "ColumnWriter",
    "Compression",
    "Evolution",
    "Format",
    "LoaderState",
    "OnError",
    "PartitionFilter",
    "Partitioning",
    "ResultSetLoader",
    "RowWriter",
    "ScanOptions",
    "ScanPlan",
    "ScanReader",
    "ScanSpec",
    "clear_schema_cache",
    "plan_scan",
    "prune",
]

