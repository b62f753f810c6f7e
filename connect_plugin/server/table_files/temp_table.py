"""A temporary table as the gateway knows it, whatever keeps it.

The noun every part of the gateway shares (creating, reading, guarding,
counting, storing tables), kept apart from the SQLite store that persists
it (``store``), so that using a table never means depending on how
it is stored.
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass, field
from pathlib import Path


def new_files_stamp() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class TempTable:
    """One temporary table: the name the user gave and where its files are."""

    name: str
    location: Path
    format: str
    schema_json: str
    partition_columns: tuple[str, ...]
    options: dict[str, str]
    rows: int | None
    """None: Spark added files since the rows were last counted (INSERT, a scan's rejects)."""
    created: datetime.datetime
    size: int | None = None
    """Bytes of its data files when last measured (after the gateway wrote them, or Spark
    added files by INSERT or a scan's rejects); None: stored by a gateway that measured none."""
    files_stamp: str = field(default_factory=new_files_stamp, compare=False)
    """Changes whenever Spark adds files to the table's folder (and at each start of the
    gateway, which does not store it): a scan of the table carries it, since Spark Connect
    reuses the plan of an identical read, file list and all."""

    @property
    def key(self) -> str:
        return self.name.lower()
