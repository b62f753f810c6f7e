"""Every version of a partitioned temp table shows Spark its partition columns in folder names.

Spark finds the partition columns of a file table (the view over a temp
table's folder) in the names of the folders that hold data files, and
nowhere else: over a folder with no such file, the view has none. Then
``INSERT INTO t PARTITION (...)`` fails with ``PARTITIONS_NOT_FOUND``, and a
plain INSERT writes its files at the folder's root, so that the view keeps
no partition columns after rows came. So a version of a partitioned table
written with no rows (a CTAS of none, a declared table, a DELETE that
empties it) gets one file of no rows in the partition whose values are all
NULL (``__HIVE_DEFAULT_PARTITION__``), written by Spark with the table's
options.

A table an older gateway left with data files at its root (or an empty
version without that file) reads right, its partition columns read from the
files; its next INSERT first rewrites it into partition folders.
"""

from __future__ import annotations

import dataclasses
import json
import string
from pathlib import Path

from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.types import StructType

from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.table_files.writes import ProgressSink, write_files
from connect_plugin.server.transport.upstream import UpstreamSession

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
"""The folder name of a NULL partition value, whatever the column's type."""
_KEPT = frozenset(string.ascii_letters + string.digits + "_")


def folder_name(column: str) -> str:
    """``column`` as the name part of a partition folder, read back by Spark as written.

    Spark unescapes ``%XX`` in a partition folder's column name; every ASCII
    character but letters, digits and ``_`` is escaped that way, so that no
    name can start with ``.`` (which Spark takes for a hidden folder) or hold
    ``/`` or ``=``. Other characters stay as they are (an escape stands for
    one byte).
    """
    return "".join(c if c in _KEPT or ord(c) > 0x7F else f"%{ord(c):02X}" for c in column)


def null_partition(table: TempTable) -> Path:
    """The folder of the partition whose values are all NULL."""
    schema = StructType.fromJson(json.loads(table.schema_json))
    names = {f.name.lower(): f.name for f in schema.fields}
    parts = [
        f"{folder_name(names.get(c.lower(), c))}={HIVE_DEFAULT_PARTITION}"
        for c in table.partition_columns
    ]
    return table.location.joinpath(*parts)


async def write_null_partition(
    upstream: UpstreamSession,
    table: TempTable,
    *,
    progress: ProgressSink,
    operation_id: str,
    outcome: str,
) -> None:
    """Write a file of no rows of the table's data columns into its NULL partition."""
    schema = StructType.fromJson(json.loads(table.schema_json))
    partitions = {c.lower() for c in table.partition_columns}
    data = StructType([f for f in schema.fields if f.name.lower() not in partitions])
    relation = spark_proto.Relation()
    relation.local_relation.schema = data.json()
    marker = dataclasses.replace(table, location=null_partition(table))
    await write_files(
        upstream,
        relation,
        marker,
        partition_columns=(),
        options=table.options,
        progress=progress,
        operation_id=operation_id,
        outcome=outcome,
    )


def laid_out(table: TempTable) -> bool:
    """Whether the table's folder shows Spark its partition columns: data files only inside
    partition folders, and at least one such folder (none to see for a table without them)."""
    if not table.partition_columns:
        return True
    entries = list(table.location.iterdir()) if table.location.is_dir() else []
    folders = [e for e in entries if e.is_dir() and "=" in e.name]
    root_files = [e for e in entries if e.is_file() and not e.name.startswith(("_", "."))]
    return bool(folders) and not root_files
