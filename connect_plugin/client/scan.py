"""``connect_plugin.scan``: schema-on-read file scans as Spark Connect DataFrames.

The DataFrame's plan is one plugin ``Scan`` relation; the gateway turns it
into a read of the scan data source running inside Spark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from google.protobuf.message import Message
from pyspark.sql.connect.dataframe import DataFrame
from pyspark.sql.connect.types import pyspark_types_to_proto_types
from pyspark.sql.pandas.types import from_arrow_schema

from connect_plugin import proto
from connect_plugin.client.plan import PluginRelation, session_id_of

if TYPE_CHECKING:
    from pyspark.sql.connect.client import SparkConnectClient

_ON_ERROR = {
    "fail": proto.BadRecordPolicy.BAD_RECORD_POLICY_FAIL,
    "skip": proto.BadRecordPolicy.BAD_RECORD_POLICY_SKIP,
    "null": proto.BadRecordPolicy.BAD_RECORD_POLICY_NULL,
}
_PARTITIONING = {
    "dirs": proto.Partitioning.PARTITIONING_DIRS,
    "hive": proto.Partitioning.PARTITIONING_HIVE,
}


class ScanRelation(PluginRelation):
    """The plugin ``Scan`` relation, stamped with the sending session."""

    def __init__(self, message: proto.Scan) -> None:
        super().__init__()
        self._message = message

    def to_plugin_message(self, client: SparkConnectClient) -> Message:
        message = proto.Scan()
        message.CopyFrom(self._message)
        message.session_id = session_id_of(client)
        return message


def _choice(name: str, value: str, allowed: Mapping[str, Any]) -> Any:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return allowed[value]


def scan(
    spark: Any,
    paths: str | Sequence[str] | None = None,
    *,
    table: str | None = None,
    format: str | None = None,
    columns: Sequence[str] | None = None,
    schema: str | pa.Schema | None = None,
    strict: bool = False,
    partitioning: str = "dirs",
    on_error: str = "fail",
    max_rows: int | None = None,
    max_bytes: int | None = None,
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """Scan files (``paths``: a path, a glob or a list) or a table, schema on read."""
    if (paths is None) == (table is None):
        raise ValueError("scan() needs either paths or table=, not both")
    message = proto.Scan()
    if table is not None:
        message.table = table
    else:
        if not format:
            raise ValueError("scan() over paths needs format= (json, csv, tsv, parquet or text)")
        message.files.paths.extend([paths] if isinstance(paths, str) else list(paths or ()))
        message.files.format = format
    if columns is None or list(columns) == ["*"]:
        message.wildcard = True
    else:
        message.columns.extend(columns)
    if isinstance(schema, str):
        message.schema_ddl = schema
    elif isinstance(schema, pa.Schema):
        message.schema.CopyFrom(pyspark_types_to_proto_types(from_arrow_schema(schema)))
    elif schema is not None:
        raise TypeError(
            f"schema must be a DDL string or a pyarrow.Schema, got {type(schema).__name__}"
        )
    if strict:
        message.schema_policy = proto.SchemaPolicy.SCHEMA_POLICY_STRICT
    message.partitioning = _choice("partitioning", partitioning, _PARTITIONING)
    message.on_error = _choice("on_error", on_error, _ON_ERROR)
    message.limits.max_rows = max_rows or 0
    message.limits.max_bytes = max_bytes or 0
    message.options.update({str(k): str(v) for k, v in (options or {}).items()})
    return DataFrame(ScanRelation(message), spark)
