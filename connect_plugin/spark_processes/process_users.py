"""Starting Spark's processes as another operating-system user (the caller is root).

The user is dropped by ``setpriv`` (util-linux) at the head of the command,
not by ``subprocess``'s ``user``/``group``: with those, Python forks instead
of ``vfork``-ing, and the fork runs gRPC's fork handlers in a child of a
process whose gRPC threads are busy, which can crash the child before it
runs anything. ``setpriv`` takes every group but the user's primary one and
sets ``no_new_privs``, so nothing the process runs gains privileges
(set-user-id programs included); the umask is ``077``.
"""

from __future__ import annotations

import shutil
from typing import Any

from connect_plugin.errors import EnvironmentProblem

SETPRIV = "setpriv"
UMASK = 0o077


def as_user(command: list[str], ids: tuple[int, int] | None) -> list[str]:
    """``command`` run as (uid, gid) with that group alone; ``command`` itself for None."""
    if ids is None:
        return command
    setpriv = shutil.which(SETPRIV)
    if setpriv is None:
        raise EnvironmentProblem(
            "starting an engine as an operating-system user of its own needs setpriv "
            "(util-linux): apt-get install util-linux"
        )
    uid, gid = ids
    return [
        setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--no-new-privs", "--",
        *command,
    ]  # fmt: skip


def user_options(ids: tuple[int, int] | None) -> dict[str, Any]:
    """``subprocess.Popen``'s arguments beside ``as_user``'s command: the umask."""
    return {} if ids is None else {"umask": UMASK}
