"""The invariant every fault test ends with: workspace, registry and Spark agree.

The set of folders under the workspace equals the set of live tables, every
live table reads back its rows, every dead one is gone (no name, no folder,
no row).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import SparkSession

from connect_plugin.server.sessions.workspace import PRIVATE_DIR
from tests.integration.faults.gateway_process import GatewayProcess
from tests.integration.support import temp_table_names


def workspace_folders(workspace: Path) -> set[Path]:
    """Session and table folders (the gateway's private folder left out)."""
    found: set[Path] = set()
    for session in workspace.iterdir():
        if session.name == PRIVATE_DIR:
            continue
        found.add(session)
        if session.is_dir():
            found.update(session.iterdir())
    return found


def ready_rows(gateway: GatewayProcess) -> dict[tuple[str, str], Path]:
    """(session id, lower-cased name) -> location, for the registry's ready tables."""
    rows = gateway.rows("SELECT session_id, name_key, location FROM temp_tables WHERE state = 'ready'")
    return {(str(sid), str(key)): Path(str(loc)) for sid, key, loc in rows}


def assert_consistent(
    gateway: GatewayProcess,
    live: Mapping[SparkSession, Mapping[str, int]],
    dead: Mapping[SparkSession, Iterable[str]] | None = None,
) -> None:
    """``live``: per client session, table name -> rows; ``dead``: names that must be gone."""
    rows = ready_rows(gateway)
    unfinished = gateway.rows("SELECT name, state FROM temp_tables WHERE state != 'ready'")
    assert unfinished == [], f"rows left unfinished: {unfinished}"
    expected_folders: set[Path] = set()
    expected_rows: dict[tuple[str, str], Path] = {}
    for spark, tables in live.items():
        session_id = spark.client._session_id
        if (gateway.workspace / session_id).is_dir():
            expected_folders.add(gateway.workspace / session_id)
        assert sorted(temp_table_names(spark)) == sorted(tables)
        for name, count in tables.items():
            location = rows.get((session_id, name.lower()))
            assert location is not None, f"no ready registry row for [{name}]"
            assert location.parent.name == session_id
            expected_rows[session_id, name.lower()] = location
            expected_folders.update((location.parent, location))
            assert spark.table(name).count() == count, f"[{name}] lost rows"
    assert rows == expected_rows, "the registry holds tables no client has"
    assert workspace_folders(gateway.workspace) == expected_folders
    for spark, names in (dead or {}).items():
        for name in names:
            with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
                spark.table(name).schema  # noqa: B018


@contextlib.contextmanager
def unwritable(folder: Path) -> Iterator[None]:
    """No entry can be added to or removed from ``folder``, whoever the gateway and Spark run as."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(folder)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
    else:
        mode = folder.stat().st_mode
        folder.chmod(0o500)
        try:
            yield
        finally:
            folder.chmod(mode)


def assert_names(message: str, *things: str) -> None:
    for thing in things:
        assert thing in message, f"{thing} not named in: {message}"


def error_of(spark: SparkSession, statement: str) -> str:
    with pytest.raises(PySparkException) as caught:
        spark.sql(statement).collect()
    return str(caught.value)
