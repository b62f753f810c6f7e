"""Scan framework: Arrow batch building and schema-on-read file scans.

Its parts, from the floor up; each imports only parts listed above it here,
as its own docstring says (``tests/unit/scanning/test_scan_layers.py`` holds
the code to that):

- ``choices``: the scan's choices as enums, and the words users write for them;
- ``names``: how the scan matches names (of columns, keys, the schema): one rule;
- ``loader``: ``ResultSetLoader``, rows in, Arrow batches within limits out;
- ``files``: where a scan's files are, and which ones it reads;
- ``formats``: each format's reader, and the records, rescued column and type
  widening rules a reader hands up;
- ``request``: ``ScanOptions`` and ``ScanSpec``, what a scan asks for;
- ``planning``: ``plan_scan``, the files' schema on read, the output columns
  and partition pruning, settled on the driver;
- ``reading``: ``ScanReader``, the batches of a plan, file after file;
- ``spark``: the scan as a Spark Python data source.

Pure Python and pyarrow: nothing here imports pyspark or grpc, except the
``spark`` package, which binds the scan to Spark and is imported only where
Spark runs it. This module re-exports the public names of the other parts,
none of ``spark``, so that ``import connect_plugin.scanning`` loads no pyspark;
``predicates`` (the file filters a scan takes) and ``rejects`` (the files of
a rejects table a scan fills) are public as namespaces of their own.
``connect_plugin.scanning.spark`` is the public face of the Spark binding.
"""

from __future__ import annotations

from connect_plugin.scanning.choices import Compression, Evolution, OnError, Partitioning
from connect_plugin.scanning.formats import Format, ensure_format, format_of
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
from connect_plugin.scanning.reading import rejects
from connect_plugin.scanning.reading.scanner import ScanReader
from connect_plugin.scanning.request import predicates
from connect_plugin.scanning.request.options import SCAN_OPTIONS, ScanOptions
from connect_plugin.scanning.request.predicates import FileFilter
from connect_plugin.scanning.request.spec import ScanSpec

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ROWS",
    "MAX_ROWS_CEILING",
    "SCAN_OPTIONS",
    "ColumnWriter",
    "Compression",
    "Evolution",
    "FileFilter",
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
    "ensure_format",
    "format_of",
    "plan_scan",
    "predicates",
    "prune",
    "rejects",
]

