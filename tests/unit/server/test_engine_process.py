"""An engine's folder, and the engines a gateway that died left running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from connect_plugin.server.embedded import SERVER_CLASS
from connect_plugin.server.engine_process import (
    ENGINES_FOLDER,
    GATEWAY_SETTING,
    engine_folder,
    process_mark,
    stop_strays,
)

GONE_WITHIN_S = 10.0


def test_every_owner_gets_a_folder_of_its_own_under_the_state_folder(tmp_path: Path) -> None:
    owners = ["alice", "Alice", "../etc", "a/b", "a b", "x" * 300, "ünïcode"]
    folders = [engine_folder(tmp_path, owner) for owner in owners]
    assert len(set(folders)) == len(owners)
    for folder in folders:
        assert folder.parent == tmp_path / ENGINES_FOLDER
        assert folder.name.startswith("engine-")
        assert "/" not in folder.name
        assert len(folder.name) < 64
    assert engine_folder(tmp_path, "alice").name.startswith("engine-alice-")


def _pids_mentioning(marker: str) -> set[int]:
    """The processes standing in for engines (not the ``setsid`` or shell starting one)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                words = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if words[:2] == [sys.executable.encode(), b"-c"] and marker.encode() in words:
                found.add(int(entry.name))
    return found


def test_an_engine_whose_gateway_died_is_stopped_and_a_running_gateways_stays(
    tmp_path: Path,
) -> None:
    marker = f"{tmp_path / ENGINES_FOLDER}/engine-x/"
    # Stand-ins for engines: a process that never forks, whose command line names the
    # server class, the state folder and the gateway that started it...
    stand_in = [sys.executable, "-c", "import time; time.sleep(300)", SERVER_CLASS, marker]
    # ...this process, which runs...
    kept = subprocess.Popen(
        [*stand_in, f"{GATEWAY_SETTING}={process_mark()}"], start_new_session=True
    )
    # ...or one that is gone (this process's pid, another start time), its engine an orphan.
    gone = [*stand_in, f"{GATEWAY_SETTING}={os.getpid()}:1"]
    subprocess.run(["sh", "-c", 'setsid "$@" &', "sh", *gone], check=True)
    try:
        deadline = time.monotonic() + GONE_WITHIN_S
        while len(_pids_mentioning(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        orphans = _pids_mentioning(marker) - {kept.pid}
        assert len(orphans) == 1
        assert stop_strays(tmp_path) == list(orphans)
        while _pids_mentioning(marker) - {kept.pid} and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _pids_mentioning(marker) == {kept.pid}
        assert kept.poll() is None
        assert stop_strays(tmp_path / "other") == []
    finally:
        os.killpg(kept.pid, signal.SIGKILL)
        kept.wait()
        for pid in _pids_mentioning(marker):
            os.kill(pid, signal.SIGKILL)
