"""How ``./dev test`` splits the suite between its two workers (pytest-xdist).

Each worker runs its own test session: its own Spark Connect server and
gateway, its own session fixtures. Tests go to a worker one file at a time,
so a file's module fixtures are set up once; the install tests go to one
worker together, since the environments they build (the wheel, the thin
client, the 4.0.0 server) are session fixtures their files share.

Files go out longest first, by the seconds each took in a recent run
(``DURATIONS``, written by ``--record-durations``), so that the short ones
fill in at the end instead of one worker running a long file alone. A file
not in it is placed by its number of tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from xdist.scheduler import LoadFileScheduling

SHARED_SESSION_FIXTURES = ("tests/integration/installs/",)
"""Folders whose test files all run on one worker."""
DURATIONS = Path(__file__).with_name("durations.json")
"""Seconds of test time per unit of work (file, or folder of ``SHARED_SESSION_FIXTURES``)."""
UNKNOWN_S_PER_TEST = 1.0
"""The estimate for each test of a file not in ``DURATIONS``."""


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or its folder of
    ``SHARED_SESSION_FIXTURES``."""
    scope = nodeid.split("::", 1)[0]
    return next((f for f in SHARED_SESSION_FIXTURES if scope.startswith(f)), scope)


def recorded_durations() -> dict[str, float]:
    if not DURATIONS.exists():
        return {}
    return {str(k): float(v) for k, v in json.loads(DURATIONS.read_text()).items()}


class ByFileAndFolder(LoadFileScheduling):
    """``--dist loadfile``, with each folder of ``SHARED_SESSION_FIXTURES`` one unit, and
    the units sent out longest first."""

    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        self._durations = recorded_durations()
        self._ordered = False

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)

    def _assign_work_unit(self, node: Any) -> None:
        if not self._ordered:
            self._ordered = True
            units = dict(self.workqueue)
            self.workqueue.clear()
            for unit in longest_first({u: len(tests) for u, tests in units.items()}, self._durations):
                self.workqueue[unit] = units[unit]
        super()._assign_work_unit(node)


def longest_first(tests: dict[str, int], durations: dict[str, float]) -> list[str]:
    """Units (by their number of tests) in the order they go out: the longest first, by
    ``durations``, else by ``UNKNOWN_S_PER_TEST`` a test."""
    return sorted(tests, key=lambda unit: -durations.get(unit, UNKNOWN_S_PER_TEST * tests[unit]))
