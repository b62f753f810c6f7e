"""What a client asks the gateway to do, whichever way it asked.

A plugin message and a recognised SQL statement that mean the same thing
become the same request object, so one handler serves both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.server.statements import Name


@dataclass(frozen=True)
class CreateTempTable:
    """CREATE [OR REPLACE] TEMPORARY TABLE [IF NOT EXISTS] name ... AS <input>."""

    name: Name
    input: spark_proto.Relation
    column_names: tuple[str, ...] = ()
    partition_columns: tuple[str, ...] = ()
    format: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    if_not_exists: bool = False
    or_replace: bool = False
