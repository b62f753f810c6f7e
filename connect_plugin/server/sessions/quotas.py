"""Per-user quotas: sessions holding temp tables, tables per session, bytes per session.

Counts are checked before any work starts (a CTTAS, a clone); bytes can only
be known once Spark wrote the files, so they are checked after the write and
before the view is created, and a CTTAS over quota is undone like any other
failed one: files deleted, nothing registered. A quota of 0 has no limit.
A refusal names its quota as its setting without the ``quota_`` prefix
(``QuotaExceeded.quota``), which the metrics count refusals by.
"""

from __future__ import annotations

from connect_plugin.config import Config
from connect_plugin.errors import QuotaExceeded
from connect_plugin.server.sessions.registry import Session, SessionRegistry
from connect_plugin.server.sessions.workspace import Workspace
from connect_plugin.server.table_files.temp_table import TempTable

SESSIONS_PER_USER = "sessions_per_user"
TABLES_PER_SESSION = "tables_per_session"
BYTES_PER_SESSION = "bytes_per_session"


class Quotas:
    """Checks the quota settings of ``config`` against what the registry holds."""

    def __init__(self, config: Config, registry: SessionRegistry) -> None:
        self._config = config
        self._registry = registry

    def check_new_table(self, session: Session, name: str, replaced: TempTable | None) -> None:
        """Before a CTTAS of ``name`` in ``session`` (``replaced``: the table it replaces)."""
        if not session.tables:
            self._check_sessions(session.user_id, session, f"temporary table [{name}]")
        limit = self._config.quota_tables_per_session
        held = len(session.tables) - (replaced is not None)
        if limit and held >= limit:
            raise QuotaExceeded(
                f"temporary table [{name}] was not created: quota_tables_per_session is "
                f"{limit} and session [{session.session_id}] already holds {held} temporary "
                "tables; drop some first",
                quota=TABLES_PER_SESSION,
            )

    def check_written(
        self,
        session: Session,
        table: TempTable,
        replaced: TempTable | None,
        *,
        outcome: str = "was not created",
    ) -> None:
        """After a CTTAS (or a rewrite) wrote ``table``'s files, before it gets its name.

        Tables measured since their files were last written count as measured;
        the others (Spark added files to them) are measured now.
        """
        limit = self._config.quota_bytes_per_session
        if not limit:
            return
        others = sum(
            _measured(t)
            for t in session.tables.values()
            if replaced is None or t.location != replaced.location
        )
        written = _measured(table)
        if others + written > limit:
            raise QuotaExceeded(
                f"temporary table [{table.name}] {outcome}: quota_bytes_per_session is "
                f"{limit} bytes and session [{session.session_id}] would hold {others + written} "
                f"({written} of them this table's); its files were deleted. Drop tables or "
                "write less",
                quota=BYTES_PER_SESSION,
            )

    def check_clone(self, source: Session) -> None:
        """Before a session with temp tables is cloned (the clone holds tables too)."""
        self._check_sessions(source.user_id, None, f"the clone of session [{source.session_id}]")
        limit = self._config.quota_tables_per_session
        if limit and len(source.tables) > limit:
            raise QuotaExceeded(
                f"session [{source.session_id}] was not cloned: quota_tables_per_session is "
                f"{limit} and it holds {len(source.tables)} temporary tables",
                quota=TABLES_PER_SESSION,
            )

    def _check_sessions(self, user_id: str, session: Session | None, what: str) -> None:
        limit = self._config.quota_sessions_per_user
        if not limit:
            return
        holding = [
            s
            for s in self._registry.sessions()
            if s.user_id == user_id and s is not session and (s.tables or s.creating)
        ]
        if len(holding) >= limit:
            raise QuotaExceeded(
                f"{what} was not made: quota_sessions_per_user is {limit} and user "
                f"[{user_id}] already has {len(holding)} sessions holding temporary tables; "
                "drop their tables or release sessions first",
                quota=SESSIONS_PER_USER,
            )


def _measured(table: TempTable) -> int:
    return Workspace.size(table.location) if table.size is None else table.size
