"""The embedded JVM's class archive: written by a clean stop, mapped by the next start.

Real JVMs: the first start runs with ``-XX:ArchiveClassesAtExit`` and its
stop leaves the archive (nothing temporary); the second start maps that
file (it is in the JVM's ``/proc/<pid>/maps``) and answers queries; a JVM
killed while it writes leaves nothing.
"""

from __future__ import annotations

import os
import signal
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from connect_plugin.server.embedded import EmbeddedSparkConnect
from connect_plugin.spark_processes.class_archive import ARCHIVE_SUFFIX, PARTIAL_SUFFIX
from tests.integration.support import TEST_SPARK_CONF, spark_connect_server_pids

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("SPARK_REMOTE")), reason="starts embedded Spark Connect servers"
)


@contextmanager
def _running(root: Path, archives: Path, name: str) -> Iterator[tuple[EmbeddedSparkConnect, int]]:
    state = root / name
    server = EmbeddedSparkConnect(
        conf_dir=None,
        extra_conf={**TEST_SPARK_CONF, "spark.sql.warehouse.dir": str(state / "warehouse")},
        state_dir=state,
        class_archive=archives,
    )
    server.start()
    try:
        (jvm,) = spark_connect_server_pids(mentioning=str(state))
        yield server, jvm
    finally:
        server.stop()


def _answers(server: EmbeddedSparkConnect) -> None:
    spark = SparkSession.builder.remote(server.address).create()
    try:
        assert spark.range(1000).selectExpr("sum(id)").first()[0] == 499500
    finally:
        spark.stop()


def _command_line(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_the_first_stop_writes_the_archive_and_the_next_start_maps_it(tmp_path: Path) -> None:
    archives = tmp_path / "archives"
    with _running(tmp_path, archives, "first") as (server, jvm):
        assert "-XX:ArchiveClassesAtExit=" in _command_line(jvm)
        assert not list(archives.glob(f"*{ARCHIVE_SUFFIX}"))
        _answers(server)
    (archive,) = archives.glob(f"*{ARCHIVE_SUFFIX}")
    assert not list(archives.glob(f".*{PARTIAL_SUFFIX}"))
    assert stat.S_IMODE(archives.stat().st_mode) == 0o700
    assert archive.stat().st_size > 10_000_000

    with _running(tmp_path, archives, "second") as (server, jvm):
        assert f"-XX:SharedArchiveFile={archive}" in _command_line(jvm)
        assert str(archive) in Path(f"/proc/{jvm}/maps").read_text()
        _answers(server)
    assert list(archives.glob(f"*{ARCHIVE_SUFFIX}")) == [archive]


def test_a_jvm_killed_while_writing_leaves_nothing(tmp_path: Path) -> None:
    archives = tmp_path / "archives"
    with _running(tmp_path, archives, "killed") as (_, jvm):
        os.kill(jvm, signal.SIGTERM)
        deadline = time.monotonic() + 120
        while not list(archives.glob(f".*{PARTIAL_SUFFIX}")):
            assert time.monotonic() < deadline, "the JVM never began writing its archive"
            time.sleep(0.05)
        os.kill(jvm, signal.SIGKILL)
    assert list(archives.iterdir()) == []
