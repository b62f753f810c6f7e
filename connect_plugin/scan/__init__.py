"""Scan framework: Arrow batch building and schema-on-read file scans.

Pure Python and pyarrow: nothing here imports pyspark or grpc, except
``connect_plugin.scan.spark_source``, which binds the scan to Spark as a
Python data source and is imported only where Spark runs it.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from connect_plugin.scan.column_writers import ColumnWriter
from connect_plugin.scan.loader import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ROWS,
    MAX_ROWS_CEILING,
    ResultSetLoader,
)
from connect_plugin.scan.plan import ScanPlan, clear_schema_cache, plan_scan
from connect_plugin.scan.pruning import PartitionFilter, prune
from connect_plugin.scan.row_writer import RowWriter
from connect_plugin.scan.scanner import ScanReader
from connect_plugin.scan.spec import ScanSpec

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ROWS",
    "MAX_ROWS_CEILING",
    "ColumnWriter",
    "PartitionFilter",
    "ResultSetLoader",
    "RowWriter",
    "ScanPlan",
    "ScanReader",
    "ScanSpec",
    "clear_schema_cache",
    "plan_scan",
    "prune",
]


class _ScanPackage(types.ModuleType):
    """``connect_plugin.scan`` is this package and, called, the client's ``scan()``.

    The package itself never imports pyspark: the client function is looked
    up only when it is called.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from connect_plugin.client.scan import scan

        return scan(*args, **kwargs)


sys.modules[__name__].__class__ = _ScanPackage
