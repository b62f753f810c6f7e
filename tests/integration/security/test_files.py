"""The gateway's own files are private, and two gateways never share a registry."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from connect_plugin.config import Config
from connect_plugin.errors import RegistryInUse, WorkspaceError
from connect_plugin.server.gateway import Gateway, serve
from connect_plugin.server.sessions.workspace import LOCK_FILE, PRIVATE_DIR, REGISTRY_FILE
from tests.integration.support import Upstream, assert_private, new_session, session_folder


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _config(upstream: Upstream, workspace: Path, **settings: object) -> Config:
    return Config(
        port=0, upstream=upstream.address, workspace=workspace, conf_dir=None, **settings
    )


@pytest.fixture
def loose_workspace(tmp_path: Path) -> Path:
    """A workspace an earlier version left readable by everyone."""
    root = tmp_path / "ws"
    (root / PRIVATE_DIR).mkdir(parents=True)
    for folder in (root, root / PRIVATE_DIR):
        folder.chmod(0o755)
    for name in (REGISTRY_FILE, LOCK_FILE):
        (root / PRIVATE_DIR / name).write_bytes(b"")
        (root / PRIVATE_DIR / name).chmod(0o644)
    return root


@pytest.fixture
def gateway_on(upstream: Upstream, loose_workspace: Path) -> Iterator[Gateway]:
    running = serve(_config(upstream, loose_workspace))
    try:
        yield running
    finally:
        running.stop()


def test_files_are_private_from_the_start(gateway_on: Gateway, loose_workspace: Path) -> None:
    root = loose_workspace
    assert _mode(root) == 0o700
    assert _mode(root / PRIVATE_DIR) == 0o700
    private = sorted((root / PRIVATE_DIR).iterdir())
    assert {p.name for p in private} >= {REGISTRY_FILE, LOCK_FILE}
    for path in private:
        assert _mode(path) == 0o600, path
    spark = new_session(gateway_on.address)
    try:
        spark.sql("CREATE TEMPORARY TABLE t AS SELECT 1 AS x").collect()
        assert assert_private(session_folder(root, spark)) > 0
        for path in sorted((root / PRIVATE_DIR).iterdir()):
            assert _mode(path) == 0o600, path
    finally:
        spark.stop()


def test_the_embedded_spark_log_is_private(upstream: Upstream) -> None:
    if upstream.log_path is None:
        pytest.skip("the Spark Connect server was not started by the tests")
    assert _mode(upstream.log_path) == 0o600


def test_a_lock_link_is_not_followed(upstream: Upstream, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / PRIVATE_DIR).mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    victim.chmod(0o644)
    (root / PRIVATE_DIR / LOCK_FILE).symlink_to(victim)
    with pytest.raises(WorkspaceError, match=rf"\[{root / PRIVATE_DIR / LOCK_FILE}\].*symbolic"):
        serve(_config(upstream, root))
    assert victim.read_text() == "untouched"
    assert _mode(victim) == 0o644


def test_two_gateways_never_share_a_registry(upstream: Upstream, tmp_path: Path) -> None:
    registry = tmp_path / "shared" / "registry.sqlite3"
    first = serve(_config(upstream, tmp_path / "a", registry_path=registry))
    try:
        with pytest.raises(RegistryInUse, match=rf"\[{registry}\].*pid {os.getpid()}"):
            serve(_config(upstream, tmp_path / "b", registry_path=registry))
        assert _mode(registry) == 0o600
        assert _mode(Path(f"{registry}.lock")) == 0o600
        spark: SparkSession = new_session(first.address)
        try:
            assert spark.range(2).count() == 2
        finally:
            spark.stop()
    finally:
        first.stop()
    second = serve(_config(upstream, tmp_path / "b", registry_path=registry))
    second.stop()
