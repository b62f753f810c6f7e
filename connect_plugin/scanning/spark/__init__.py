"""The scan bound to Spark: a Python data source whose tasks read the scan's batches.

Owns ``ScanDataSource`` (``spark_source``), which plans on the driver and
reads on the executors, what differs between the pysparks it runs on
(``spark_versions``), and how a scan error leaves Spark's Python workers with
its class first and its traceback short (``worker_errors``).

The top of the scan and the only part that imports pyspark (``spark_source``
and ``spark_versions``); the gateway imports it only to register the data
source, and the worker daemons preload it.

Imports from the scan: any layer below it (``choices``, ``names``, ``files``,
``formats``, ``loader``, ``planning``, ``reading``, ``request``).

This module re-exports what the gateway needs of the data source: its class,
the name Spark knows it by, the options the gateway gives a read of it and
the Arrow schema it reads a Spark schema as.
"""

from __future__ import annotations

from connect_plugin.scanning.spark.spark_source import (
    COUNT_COLUMN,
    COUNT_OPTION,
    FILES_STAMP_OPTION,
    KEPT_PLAN_OPTION,
    SHORT_NAME,
    SPEC_OPTION,
    ScanDataSource,
)
from connect_plugin.scanning.spark.spark_versions import spark_arrow_schema_of

__all__ = [
    "COUNT_COLUMN",
    "COUNT_OPTION",
    "FILES_STAMP_OPTION",
    "KEPT_PLAN_OPTION",
    "SHORT_NAME",
    "SPEC_OPTION",
    "ScanDataSource",
    "spark_arrow_schema_of",
]
