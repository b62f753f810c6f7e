"""Workspace: what a cloned session's tables are made of, securing a table folder, and who
a session folder belongs to."""

from __future__ import annotations

import errno
import itertools
import os
import threading
import uuid
from pathlib import Path

import pytest

from connect_plugin.errors import ScanError, WorkspaceError
from connect_plugin.scanning.reading.rejects import WRITING_FOLDER, RejectFiles
from connect_plugin.server.sessions.workspace import Workspace
from tests.integration.support import assert_private


def _table(folder: Path) -> None:
    """A table folder as Spark leaves it: partitions, a marker, unfinished output."""
    for path, text in {
        "k=1/part-0.csv": "1\n",
        "k=2/part-0.csv": "2\n",
        "k=2/.part-0.csv.crc": "crc",
        "_SUCCESS": "",
        "_temporary/0/task/part-9.csv": "half",
    }.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    Workspace.secure(folder)


def _files(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_copy_links_every_finished_file_and_keeps_modes(tmp_path: Path) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    _table(source)

    assert Workspace.copy_table(source, target) == 4

    assert _files(target) == {k: v for k, v in _files(source).items() if "_temporary" not in k}
    original = source / "k=1" / "part-0.csv"
    assert os.path.samefile(original, target / "k=1" / "part-0.csv")
    assert assert_private(target) == 4
    Workspace.remove(source)
    assert (target / "k=1" / "part-0.csv").read_text() == "1\n"


def test_copy_falls_back_to_copying_where_links_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    _table(source)

    def cross_device(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    monkeypatch.setattr(os, "link", cross_device)
    assert Workspace.copy_table(source, target) == 4
    copied = target / "k=2" / "part-0.csv"
    assert copied.read_text() == "2\n"
    assert not os.path.samefile(source / "k=2" / "part-0.csv", copied)
    assert assert_private(target) == 4


def test_copy_of_a_vanished_folder_names_it(tmp_path: Path) -> None:
    source, target = tmp_path / "gone", tmp_path / "b"
    with pytest.raises(WorkspaceError, match=rf"cannot copy \[{source}\].*{source}"):
        Workspace.copy_table(source, target)


def test_copy_into_an_existing_folder_is_refused(tmp_path: Path) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    _table(source)
    target.mkdir()
    with pytest.raises(WorkspaceError, match="File exists"):
        Workspace.copy_table(source, target)


def test_securing_a_folder_measures_its_data_files_as_size_does(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    (folder / "k=1").mkdir(parents=True)
    (folder / "k=1" / "part-0.parquet").write_bytes(b"x" * 300)
    (folder / "k=1" / ".part-0.parquet.crc").write_bytes(b"c" * 7)
    (folder / "_SUCCESS").write_bytes(b"")
    assert Workspace.secure(folder) == Workspace.size(folder) == 300


def test_securing_never_changes_what_a_link_in_the_folder_points_to(tmp_path: Path) -> None:
    folder, outside = tmp_path / "t", tmp_path / "outside"
    outside.mkdir(mode=0o755)
    (outside / "file").write_text("x")
    os.chmod(outside / "file", 0o644)
    (folder / "k=1").mkdir(parents=True)
    (folder / "k=1" / "part-0.csv").write_text("1\n")
    (folder / "to-folder").symlink_to(outside)
    (folder / "k=1" / "to-file").symlink_to(outside / "file")
    os.mkfifo(folder / "pipe")

    assert Workspace.secure(folder) == 2

    assert os.stat(outside).st_mode & 0o777 == 0o755
    assert os.stat(outside / "file").st_mode & 0o777 == 0o644
    assert os.stat(folder / "k=1" / "part-0.csv").st_mode & 0o777 == 0o600
    assert os.stat(folder / "k=1").st_mode & 0o777 == 0o700


def test_a_session_folder_goes_to_the_user_its_engine_runs_as(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    owner = (65534, 65534)
    workspace = Workspace(tmp_path / "ws", lambda user: owner if user == "alice" else None)
    session = "0b8f3a52-35a4-4f1c-9d1e-0c6f8a0e3c11"
    table = workspace.new_table_folder(session, "alice")
    found = os.stat(table.parent)
    assert (found.st_uid, found.st_gid, found.st_mode & 0o777) == (*owner, 0o700)
    other = workspace.new_table_folder("1b8f3a52-35a4-4f1c-9d1e-0c6f8a0e3c11", "bob")
    assert os.stat(other.parent).st_uid == 0
    source = tmp_path / "source"
    _table(source)
    copied = tmp_path / "copied"
    Workspace.copy_table(source, copied, owner)
    assert {os.stat(p).st_uid for p in (copied, copied / "k=1")} == {owner[0]}


def _straggle(
    sink: RejectFiles, written: threading.Event, stop: threading.Event, refused: list[ScanError]
) -> None:
    """A task writing the rejects of file after file until its folder is gone (or ``stop``)."""
    for number in itertools.count():
        if stop.is_set():
            return
        try:
            sink.finish(f"file:///data/part{number}.json")
        except ScanError as exc:
            refused.append(exc)
            return
        if number == 2:
            written.set()


def test_a_table_folder_a_late_task_writes_rejects_into_is_deleted_for_good(
    tmp_path: Path,
) -> None:
    """A task Spark no longer waits for keeps writing a scan's rejects while the rejects
    table is dropped: the drop deletes the folder all the same, and the task cannot make
    it again."""
    for attempt in range(40):
        folder = tmp_path / f"table{attempt}"
        (folder / WRITING_FOLDER).mkdir(parents=True)
        sink = RejectFiles(str(folder), uuid.uuid4().hex, "reject_errors")
        written, stop = threading.Event(), threading.Event()
        refused: list[ScanError] = []
        task = threading.Thread(target=_straggle, args=(sink, written, stop, refused), daemon=True)
        task.start()
        written.wait(10)
        try:
            assert Workspace.remove(folder)
            task.join(10)
        finally:
            stop.set()
        assert not folder.exists()
        assert "reject_errors" in str(refused[0])
