"""Generated protobuf messages of connect-plugin (see proto/ and scripts/generate_protos.py)."""

from __future__ import annotations

from google.protobuf.message import Message

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

PLUGIN_RELATIONS: dict[str, type[Message]] = {
    cls.DESCRIPTOR.full_name: cls
    for cls in (CreateTempTableAsSelect, DropTempTable, ListTempTables, ReadTempTable, Scan)
}
"""Every plugin relation by its full protobuf name; each one carries a ``session_id``."""

__all__ = [
    "PLUGIN_RELATIONS",
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
