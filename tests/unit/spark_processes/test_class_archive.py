"""Which class archive a JVM start maps or writes, without a JVM: files only."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from connect_plugin.config import Config
from connect_plugin.server.stack import Stack
from connect_plugin.spark_processes.class_archive import (
    KEPT_ARCHIVES,
    PARTIAL_SUFFIX,
    STALE_PARTIAL_S,
    archive_key,
    archive_use,
    default_folder,
    with_option,
)


def _installation(root: Path) -> tuple[Path, Path]:
    java = root / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_bytes(b"java")
    jars = root / "spark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"core")
    return java, root / "spark"


def test_a_start_writes_the_archive_until_one_is_there_then_maps_it(tmp_path: Path) -> None:
    java, home = _installation(tmp_path)
    folder = tmp_path / "cache" / "jvm-classes"
    first = archive_use(folder, java, home)
    assert first is not None
    assert first.writing is not None
    assert first.option == f"-XX:ArchiveClassesAtExit={first.writing}"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    first.writing.write_bytes(b"classes")
    first.finish(stopped_cleanly=True)
    assert first.archive.read_bytes() == b"classes"
    assert not first.writing.exists()
    second = archive_use(folder, java, home)
    assert second is not None
    assert second.writing is None
    assert second.option == f"-XX:SharedArchiveFile={first.archive}"


def test_an_unclean_stop_keeps_nothing(tmp_path: Path) -> None:
    java, home = _installation(tmp_path)
    use = archive_use(tmp_path / "archives", java, home)
    assert use is not None
    assert use.writing is not None
    use.writing.write_bytes(b"half")
    use.finish(stopped_cleanly=False)
    assert list((tmp_path / "archives").iterdir()) == []


def test_another_spark_or_java_gets_its_own_archive(tmp_path: Path) -> None:
    java, home = _installation(tmp_path)
    before = archive_key(java, home)
    (home / "jars" / "spark-sql.jar").write_bytes(b"sql")
    after_jar = archive_key(java, home)
    java.write_bytes(b"another java")
    assert len({before, after_jar, archive_key(java, home)}) == 3


def test_stale_temporary_archives_are_removed_fresh_ones_kept(tmp_path: Path) -> None:
    java, home = _installation(tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    stale = folder / f".spark-x.jsa.1{PARTIAL_SUFFIX}"
    fresh = folder / f".spark-x.jsa.2{PARTIAL_SUFFIX}"
    for partial in (stale, fresh):
        partial.write_bytes(b"part")
    old = time.time() - STALE_PARTIAL_S - 60
    os.utime(stale, (old, old))
    archive_use(folder, java, home)
    assert not stale.exists()
    assert fresh.exists()


def test_the_option_joins_the_callers_submit_options() -> None:
    assert with_option({}, "-XX:A") == "-XX:A"
    assert with_option({"SPARK_SUBMIT_OPTS": " -Dx=1 "}, "-XX:A") == "-Dx=1 -XX:A"


def test_the_folder_is_under_the_cache_home() -> None:
    assert default_folder({"XDG_CACHE_HOME": "/c"}) == Path("/c/connect-plugin/jvm-classes")
    assert default_folder({}) == Path.home() / ".cache" / "connect-plugin" / "jvm-classes"


def test_serve_local_keeps_its_archive_in_the_cache_unless_told_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folders = {"workspace": tmp_path / "ws", "state_dir": tmp_path / "state"}
    kept = Stack(Config(local=True, **folders)).embedded
    assert kept is not None
    assert kept.class_archive == tmp_path / "cache" / "connect-plugin" / "jvm-classes"
    off = Stack(Config(local=True, class_archive=False, **folders)).embedded
    assert off is not None
    assert off.class_archive is None


def test_writing_an_archive_keeps_only_the_newest_few(tmp_path: Path) -> None:
    java, home = _installation(tmp_path)
    folder = tmp_path / "archives"
    folder.mkdir()
    older = [folder / f"spark-old{n}.jsa" for n in range(KEPT_ARCHIVES)]
    for age, archive in enumerate(older, start=1):
        archive.write_bytes(b"classes")
        then = time.time() - 3600 * age
        os.utime(archive, (then, then))
    use = archive_use(folder, java, home)
    assert use is not None
    assert use.writing is not None
    use.writing.write_bytes(b"new classes")
    use.finish(stopped_cleanly=True)
    kept = sorted(a.name for a in folder.glob("spark-*.jsa"))
    assert kept == sorted([use.archive.name, *(a.name for a in older[: KEPT_ARCHIVES - 1])])
