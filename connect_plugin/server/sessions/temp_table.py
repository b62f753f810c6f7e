"""A temporary table as the gateway knows it, whatever keeps it.

The noun every part of the gateway shares (creating, reading, guarding,
counting, storing tables), kept apart from the SQLite store that persists
it (``store``), so that using a table never means depending on how
it is stored.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path


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

    @property
    def key(self) -> str:
        return self.name.lower()
