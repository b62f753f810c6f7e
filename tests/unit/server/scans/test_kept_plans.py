"""Where the gateway keeps the first plan of each scan() call: per session, bounded, optional."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from connect_plugin.errors import PlanError
from connect_plugin.scanning import ScanSpec
from connect_plugin.server.scans import scan_sessions
from connect_plugin.server.scans.rejects import RejectsTables
from connect_plugin.server.scans.relation import Scans
from connect_plugin.server.scans.scan_sessions import ScanSessions
from connect_plugin.server.sessions.registry import SessionRegistry
from connect_plugin.server.sessions.store import SqliteSessionStore
from connect_plugin.server.sessions.workspace import SCANS_DIR, Workspace
from connect_plugin.server.tables.catalog import Tables
from connect_plugin.server.transport.upstream import SessionContext, Upstream

CALL = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[ScanSessions]:
    store = SqliteSessionStore(tmp_path / "r.sqlite3")
    try:
        yield ScanSessions(SessionRegistry(store))
    finally:
        store.close()


def scans(sessions: ScanSessions, root: Path) -> Scans:
    return Scans(
        sessions,
        cast(Tables, None),
        cast(Upstream, None),
        cast(RejectsTables, None),
        Workspace(root),
    )


def context() -> SessionContext:
    return SessionContext.of_stored("alice", str(uuid.uuid4()))


def test_a_plan_is_kept_per_call_and_spec_in_the_sessions_folder(
    sessions: ScanSessions, tmp_path: Path
) -> None:
    alice = context()
    kept = scans(sessions, tmp_path / "ws")._kept_plan
    spec = ScanSpec(["/data"], "json")
    first = Path(kept(alice, CALL, spec))
    assert first.parent == tmp_path / "ws" / alice.session_id / SCANS_DIR
    assert first.parent.stat().st_mode & 0o777 == 0o700
    assert kept(alice, CALL, spec) == str(first)
    assert kept(alice, "f" * 32, spec) != str(first)
    assert kept(alice, CALL, ScanSpec(["/data"], "json", columns=["id"])) != str(first)
    assert Path(kept(context(), CALL, spec)).parent != first.parent


def test_a_call_id_that_is_not_hex_is_refused(sessions: ScanSessions, tmp_path: Path) -> None:
    kept = scans(sessions, tmp_path / "ws")._kept_plan
    for bad in ("../../etc", "0123", CALL.upper(), CALL + "0"):
        with pytest.raises(PlanError, match="call_id"):
            kept(context(), bad, ScanSpec(["/data"], "json"))


def test_a_session_keeps_the_plans_of_its_last_calls(
    sessions: ScanSessions, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan_sessions, "KEPT_PLANS", 2)
    alice = context()
    folder = tmp_path / "plans"
    folder.mkdir()
    paths = []
    for name in ("a.json", "b.json", "a.json", "c.json"):
        path = sessions.kept_plan(alice, name, lambda _: folder)
        path.write_text("{}")
        paths.append(path)
    assert sorted(p.name for p in folder.iterdir()) == ["a.json", "c.json"]


def test_an_unwritable_workspace_keeps_no_plan(sessions: ScanSessions, tmp_path: Path) -> None:
    """Scans do not need the workspace: each is then planned from the files there are."""
    root = tmp_path / "ws"
    root.write_text("a file where the workspace folder should be")
    assert scans(sessions, root)._kept_plan(context(), CALL, ScanSpec(["/data"], "json")) == ""
