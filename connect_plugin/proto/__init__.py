"""Generated protobuf messages of connect-plugin (see proto/ and scripts/generate_protos.py)."""

from __future__ import annotations

from connect_plugin.proto.relations_pb2 import (
    BadRecordPolicy,
    BatchLimits,
    CreateTempTableAsSelect,
    DropTempTable,
    ListTempTables,
    Partitioning,
    ReadTempTable,
    Scan,
    SchemaPolicy,
)

__all__ = [
    "BadRecordPolicy",
    "BatchLimits",
    "CreateTempTableAsSelect",
    "DropTempTable",
    "ListTempTables",
    "Partitioning",
    "ReadTempTable",
    "Scan",
    "SchemaPolicy",
]
