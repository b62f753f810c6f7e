"""Generated protobuf messages of connect-plugin (see proto/ and scripts/generate_protos.py)."""

from __future__ import annotations

import re
from typing import Any

from google.protobuf.message import Message

from connect_plugin.proto.relations_pb2 import (
    BadRecordPolicy,
    BatchLimits,
    Compression,
    CreateTempTableAsSelect,
    DropTempTable,
    Evolution,
    ListTempTables,
    MissingColumns,
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
    "Compression",
    "CreateTempTableAsSelect",
    "DropTempTable",
    "Evolution",
    "ListTempTables",
    "MissingColumns",
    "Partitioning",
    "ReadTempTable",
    "Scan",
    "SchemaPolicy",
    "word_of",
]


def word_of(enum: Any, value: int) -> str:
    """A proto enum value as the word the scan options use: ``BAD_RECORD_POLICY_SKIP`` -> ``skip``.

    Every plugin enum prefixes its values with its own name in upper snake
    case, so words and values map into each other without a table per enum.
    """
    name: str = enum.Name(value)
    return name.removeprefix(_prefix(enum)).lower()


def _prefix(enum: Any) -> str:
    """``BadRecordPolicy`` -> ``BAD_RECORD_POLICY_``."""
    name: str = enum.DESCRIPTOR.name
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper() + "_"
