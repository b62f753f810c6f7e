"""Running api_session.py in a fresh environment and what every install must see."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.integration.installs.venvs import Venv

SCRIPT = Path(__file__).with_name("api_session.py")

EXPECTED: dict[str, Any] = {
    "sum": 45,
    "arrow_rows": 5000,
    "pandas": [0, 1, 2],
    "error": "TABLE_OR_VIEW_NOT_FOUND",
    "created": ["api_t", 10],
    "sql": [["api_sql", "1"]],
    "count": 5,
    "joined": 5,
    "listed": ["api_sql", "api_t"],
    "scan_schema": [["id", "bigint"], ["ms", "double"], ["host", "string"], ["dir0", "string"]],
    "scan_rows": [
        ["1", "5.0", None, "2024"],
        ["2", "7.0", None, "2024"],
        ["3", "1.5", "h1", "2025"],
        ["4", "2.0", "h2", "2025"],
    ],
    "scan_filtered": [["3", "1.5", "h1", "2025"], ["4", "2.0", "h2", "2025"]],
    "scan_after_filter": 4,
    "scan_count": 4,
    "events_schema": [["id", "int"], ["ts", "timestamp"], ["tags", "array<string>"]],
    "events": [["1", "2024-05-01 12:30", "['a', 'b']"], ["2", None, "[]"]],
    "scan_table": 5,
    "pruned": [["9", "good"]],
    "scan_bad_record": [
        "CONNECT_PLUGIN.SCAN_BAD_RECORD",
        "[CONNECT_PLUGIN.SCAN_BAD_RECORD] file DATA/parts/bad/a.json, line 2: malformed json "
        "(Expecting value); fix the record, or scan with on_error='skip' to drop bad records, "
        "on_error='null' to null bad values or on_error='reject' to keep them in a rejects table",
    ],
    "scan_missing": [
        "CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND",
        "[CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND] path 'DATA/nothing' does not exist (looked for "
        "DATA/nothing); check the path, which is read on the Spark server's file system",
    ],
    "dropped": [True, "Temporary table [api_t] dropped"],
    "left": ["api_sql"],
}


def run_api_session(venv: Venv, address: str, data_dir: Path) -> dict[str, Any]:
    """What the API session saw, after checking it used only the environment's own packages."""
    done = venv.run([str(SCRIPT), address, str(data_dir)])
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    site = str(venv.site_packages())
    assert seen["connect_plugin_file"].startswith(site), seen["connect_plugin_file"]
    assert seen["pyspark_file"].startswith(site), seen["pyspark_file"]
    return seen


def assert_api_works(venv: Venv, address: str, data_dir: Path) -> dict[str, Any]:
    """The whole API gives the expected results, on every server version (4.0 prunes too)."""
    seen = run_api_session(venv, address, data_dir)
    assert {key: seen.get(key) for key in EXPECTED} == EXPECTED
    return seen
