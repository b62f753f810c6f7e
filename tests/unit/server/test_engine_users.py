"""The operating-system users engines run as: what the gateway checks, as that user, first."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_plugin.errors import EnvironmentProblem
from connect_plugin.server.engine_users import EngineUser, own_folder, prepare_as


@pytest.fixture
def passable() -> Iterator[Path]:
    """A folder others may pass through (pytest's own is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="connect-plugin-engine-users-"))
    folder.chmod(0o711)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


@pytest.fixture
def nobody() -> EngineUser:
    if os.geteuid() != 0:
        pytest.skip("running as another user needs root")
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("this machine has no user nobody")
    return EngineUser(entry.pw_name, entry.pw_uid, entry.pw_gid)


def test_the_check_names_the_first_path_the_user_cannot_reach(
    passable: Path, nobody: EngineUser
) -> None:
    tmp_path = passable
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    (closed / "java").write_text("")
    (tmp_path / "open").write_text("x")
    (tmp_path / "open").chmod(0o644)
    with pytest.raises(EnvironmentProblem) as refused:
        prepare_as(nobody, "alice", readable=[tmp_path / "open"], runnable=[closed / "java"])
    text = str(refused.value)
    assert f"cannot run or enter {closed / 'java'};" in text
    assert "'alice'" in text
    assert "chmod o+rx" in text


def test_folders_are_made_by_the_user_inside_its_own(passable: Path, nobody: EngineUser) -> None:
    tmp_path = passable
    own = tmp_path / "engine"
    own_folder(own, nobody)
    prepare_as(nobody, "alice", folders=[own / "tmp" / "deeper"])
    for folder in (own, own / "tmp", own / "tmp" / "deeper"):
        found = os.stat(folder)
        assert (found.st_uid, found.st_mode & 0o777) == (nobody.uid, 0o700)
    (own / "link").symlink_to(tmp_path)
    with pytest.raises(EnvironmentProblem, match="is not a folder"):
        own_folder(own / "link", nobody)


def test_a_folder_left_by_another_user_is_given_whole_and_no_link_is_followed(
    passable: Path, nobody: EngineUser
) -> None:
    outside = passable / "outside"
    outside.mkdir()
    earlier = passable / "engine"
    (earlier / "warehouse" / "t").mkdir(parents=True)
    (earlier / "warehouse" / "t" / "part-0").write_text("x")
    (earlier / "warehouse" / "away").symlink_to(outside)
    own_folder(earlier, nobody)
    for path in (earlier, earlier / "warehouse", earlier / "warehouse" / "t" / "part-0"):
        assert os.lstat(path).st_uid == nobody.uid, path
    assert os.lstat(earlier / "warehouse" / "away").st_uid == nobody.uid
    assert os.stat(outside).st_uid == 0
