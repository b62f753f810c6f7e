"""How ``./dev test`` splits the suite between its two workers (pytest-xdist).

Each worker runs its own test session: its own Spark Connect server and
gateway, its own session fixtures. Tests go to a worker one file at a time,
so a file's module fixtures are set up once; the install tests go to one
worker together, since the environments they build (the wheel, the thin
client, the 4.0.0 server) are session fixtures their files share.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling

SHARED_SESSION_FIXTURES = ("tests/integration/installs/",)
"""Folders whose test files all run on one worker."""


class ByFileAndFolder(LoadFileScheduling):
    """``--dist loadfile``, with each folder of ``SHARED_SESSION_FIXTURES`` one unit."""

    def _split_scope(self, nodeid: str) -> str:
        scope = super()._split_scope(nodeid)
        return next((f for f in SHARED_SESSION_FIXTURES if scope.startswith(f)), scope)
