"""What the scans keep of each session: their data source's registration, and the scans of
the plans it cached.

The gateway registers the scan data source once per session (the class is
pickled by reference, so Spark's Python workers import it from the installed
``connect_plugin``; the client never ships code), counts the scans that
plans the session persisted hold whole (``cached_scans``), keeps the
files stamp each such scan of a temp table was read with, and names the
files that keep the first plan of each of its ``scan()`` calls (in the
session's folder, which goes with the session). This is the
scans' own record of a session, beside the registry's: the registry asks it
whether a session holds anything here (a registered source: the session's
end must stop its Python workers) and lets it go with the session's object.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.serializers import CloudPickleSerializer
from pyspark.sql.connect import proto as spark_proto

from connect_plugin import proto
from connect_plugin.errors import PlanError, UpstreamFailed
from connect_plugin.scanning.spark import ScanDataSource
from connect_plugin.server.scans.cached_scans import clears_cache, scan_key, track, unrewritten
from connect_plugin.server.sessions.registry import Session, SessionRegistry
from connect_plugin.server.sessions.release import learn_server_side_session
from connect_plugin.server.statements.handlers import CachedScans
from connect_plugin.server.transport.upstream import SessionContext, UpstreamSession

KEPT_PLANS = 1024
"""Plans of ``scan()`` calls kept per session, at most (a few kilobytes each, on disk)."""


@dataclass(eq=False)
class _ScanSession:
    registered: bool = False
    registering: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while the data source is registered, so that it is registered once."""
    cached: Counter[bytes] = field(default_factory=Counter)
    """Scans in plans the client persisted, which rewrites leave whole (``cached_scans``)."""
    stamps: dict[bytes, str] = field(default_factory=dict)
    """The files stamp each scan of a temp table was last read with, kept for the scans of
    ``cached``."""
    plans_folder: Path | None = None
    kept_plans: OrderedDict[Path, None] = field(default_factory=OrderedDict)
    """The files of the plans the session's ``scan()`` calls keep, least recently read first."""


class ScanSessions:
    """The scans' record of every session the registry holds an object for."""

    def __init__(self, registry: SessionRegistry) -> None:
        self._registry = registry
        self._records: dict[Session, _ScanSession] = {}
        registry.add_part(self)

    def holds(self, session: Session) -> bool:
        record = self._records.get(session)
        return record is not None and record.registered

    def let_go(self, session: Session, *, ended: bool) -> None:
        self._records.pop(session, None)

    def _found(self, user_id: str, session_id: str) -> _ScanSession | None:
        session = self._registry.find(user_id, session_id)
        return None if session is None else self._records.setdefault(session, _ScanSession())

    def _opened(self, user_id: str, session_id: str) -> _ScanSession:
        return self._records.setdefault(self._registry.open(user_id, session_id), _ScanSession())

    def cached(self, user_id: str, session_id: str) -> CachedScans:
        """The keys of the session's scans that rewrites leave whole."""
        record = self._found(user_id, session_id)
        return () if record is None else record.cached

    def executed(self, request: spark_proto.ExecutePlanRequest) -> None:
        """``spark.catalog.clearCache()`` uncaches every plan: no scan is kept whole since."""
        if clears_cache(request.plan):
            record = self._found(request.user_context.user_id, request.session_id)
            if record is not None:
                record.cached.clear()

    def analysed(self, request: spark_proto.AnalyzePlanRequest) -> None:
        """Count the scans a persisted plan holds whole; uncount those of an unpersisted one
        (once the rewrites ran on it)."""
        keys = unrewritten(request)
        if keys:
            user_id, session_id = request.user_context.user_id, request.session_id
            track(request, keys, self._opened(user_id, session_id).cached)

    def kept_plan(
        self, context: SessionContext, name: str, folder_of: Callable[[str], Path]
    ) -> Path:
        """Where the plan of one ``scan()`` call of the session is kept (``planning.kept``),
        in the folder ``folder_of`` makes for the session (once per session object).

        The session keeps the plans of its last ``KEPT_PLANS`` calls read; the
        file of an older one is deleted, and a later read of that call plans
        it anew.
        """
        session = self._registry.open(context.user_id, context.session_id)
        record = self._records.setdefault(session, _ScanSession())
        if record.plans_folder is None:
            record.plans_folder = folder_of(context.session_id)
        kept = record.kept_plans
        path = record.plans_folder / name
        kept[path] = None
        kept.move_to_end(path)
        while len(kept) > KEPT_PLANS:
            old, _ = kept.popitem(last=False)
            with contextlib.suppress(OSError):
                old.unlink()
        return path

    def kept_stamp(self, context: SessionContext, message: proto.Scan, stamp: str) -> str:
        """The files stamp a scan of a temp table carries: its table's, except for a scan
        that a plan the session persisted holds, which keeps the stamp it was persisted
        with, so that Spark still finds that plan's cache (as a cached read of files keeps
        the rows it read) and ``unpersist`` releases it."""
        record = self._found(context.user_id, context.session_id)
        if record is None:
            return stamp
        key = scan_key(message)
        kept = record.stamps
        if key in record.cached and key in kept:
            return kept[key]
        for old in [k for k in kept if k not in record.cached]:
            del kept[old]
        kept[key] = stamp
        return stamp

    async def register(self, upstream: UpstreamSession, context: SessionContext) -> None:
        """Register the scan source in the session, once.

        Concurrent first scans of a session wait for one registration: two
        registrations at once make Spark refuse one (``DATA_SOURCE_ALREADY_EXISTS``).
        The server-side session is recorded too, whose Python workers the
        session's end reaps.
        """
        session = self._registry.open(context.user_id, context.session_id)
        record = self._records.setdefault(session, _ScanSession())
        if record.registered:
            return
        async with record.registering:
            if record.registered:
                return
            try:
                await upstream.command(_registration())
            except UpstreamFailed as exc:
                raise PlanError(f"registering the scan data source failed: {exc}") from exc
            record.registered = True
            if not session.server_side_session_id:
                await learn_server_side_session(self._registry, session, upstream)


def _registration() -> spark_proto.Command:
    """The command that registers the scan data source, pickled by reference."""
    command = spark_proto.Command()
    registration = command.register_data_source
    registration.name = ScanDataSource.name()
    pickled = CloudPickleSerializer().dumps(ScanDataSource)  # type: ignore[no-untyped-call]
    registration.python_data_source.command = pickled
    registration.python_data_source.python_ver = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return command
