"""Workspace.copy_table: what a cloned session's tables are made of."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from connect_plugin.errors import WorkspaceError
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
