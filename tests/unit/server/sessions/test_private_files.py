"""The gateway's own files: modes set on the open file, links refused, locks exclusive."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from connect_plugin.errors import RegistryError, RegistryInUse, WorkspaceError, WorkspaceInUse
from connect_plugin.server.sessions.private_files import FileLock, open_private, secure_sqlite
from connect_plugin.server.sessions.store import SqliteSessionStore
from connect_plugin.server.sessions.workspace import LOCK_FILE, PRIVATE_DIR, Workspace


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_new_file_is_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        os.close(open_private(tmp_path / "new"))
    finally:
        os.umask(old)
    assert _mode(tmp_path / "new") == 0o600


def test_an_existing_file_is_made_0600(tmp_path: Path) -> None:
    path = tmp_path / "old"
    path.write_text("kept")
    path.chmod(0o644)
    os.close(open_private(path))
    assert _mode(path) == 0o600
    assert path.read_text() == "kept"


def test_a_symlink_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("")
    target.chmod(0o644)
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(OSError, match=os.strerror(errno.ELOOP)):
        open_private(tmp_path / "link")
    assert _mode(target) == 0o644


def test_the_workspace_and_its_private_folder_are_0700(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    lock = Workspace(root).lock()
    try:
        assert _mode(root) == 0o700
        assert _mode(root / PRIVATE_DIR) == 0o700
        assert _mode(root / PRIVATE_DIR / LOCK_FILE) == 0o600
    finally:
        lock.release()


def test_a_planted_lock_link_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / PRIVATE_DIR).mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("")
    (root / PRIVATE_DIR / LOCK_FILE).symlink_to(elsewhere)
    with pytest.raises(WorkspaceError, match="symbolic link"):
        Workspace(root).lock()


def test_a_second_workspace_lock_names_the_holder(tmp_path: Path) -> None:
    first = Workspace(tmp_path / "ws").lock()
    try:
        with pytest.raises(WorkspaceInUse, match=rf"pid {os.getpid()}"):
            Workspace(tmp_path / "ws").lock()
    finally:
        first.release()
    Workspace(tmp_path / "ws").lock().release()


def test_a_registry_outside_the_workspace_is_locked_too(tmp_path: Path) -> None:
    registry = tmp_path / "shared" / "registry.sqlite3"
    first = Workspace(tmp_path / "a").lock(registry)
    try:
        with pytest.raises(RegistryInUse, match=rf"\[{registry}\].*pid {os.getpid()}"):
            Workspace(tmp_path / "b").lock(registry)
        assert _mode(Path(f"{registry}.lock")) == 0o600
        Workspace(tmp_path / "b").lock().release()
    finally:
        first.release()
    Workspace(tmp_path / "b").lock(registry).release()


def test_a_registry_inside_the_workspace_needs_no_lock_of_its_own(tmp_path: Path) -> None:
    registry = tmp_path / "ws" / "registry.sqlite3"
    Workspace(tmp_path / "ws").lock(registry).release()
    assert not Path(f"{registry}.lock").exists()


def test_the_registry_and_its_journals_are_0600(tmp_path: Path) -> None:
    path = tmp_path / "registry.sqlite3"
    store = SqliteSessionStore(path)
    try:
        for companion in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            if companion.exists():
                assert _mode(companion) == 0o600, companion
    finally:
        store.close()
    for companion in (path, Path(f"{path}-wal")):
        if companion.exists():
            companion.chmod(0o644)
    Path(f"{path}-journal").write_text("")
    Path(f"{path}-journal").chmod(0o644)
    secure_sqlite(path)
    for companion in (path, Path(f"{path}-journal")):
        assert _mode(companion) == 0o600, companion


def test_a_registry_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real.sqlite3").write_text("")
    (tmp_path / "registry.sqlite3").symlink_to(tmp_path / "real.sqlite3")
    with pytest.raises(RegistryError, match="symbolic link"):
        SqliteSessionStore(tmp_path / "registry.sqlite3")


def test_a_file_lock_is_exclusive_until_released(tmp_path: Path) -> None:
    def refuse(holder: str) -> WorkspaceInUse:
        return WorkspaceInUse(f"held by {holder}")

    first = FileLock(tmp_path / "x.lock", refuse)
    with pytest.raises(WorkspaceInUse, match=f"held by {os.getpid()}"):
        FileLock(tmp_path / "x.lock", refuse)
    first.release()
    FileLock(tmp_path / "x.lock", refuse).release()
