"""The operating-system users engines run as: isolation between owners that holds against code.

An engine runs its owner's code (Python UDFs, data sources, ``reflect``)
as the user its JVM runs as. Run as the gateway's user, every engine could
read every other's token (``/proc/<pid>/environ``), temporary table files,
the tokens file and the registry. With ``engine_os_users`` and a gateway run
as root, each owner's engine runs as an operating-system user of its own,
made by the operator, with only its primary group: its state, temporary and
Python worker folders are its own (``0700``), its token is in its JVM's
environment, which the kernel shows to that user and root only, and the
gateway's own files stay root's. Folders the engines pass through on the
way to their own (the state folder's ``engines/``, the workspace root) are
root's and ``0711``: passable, not listable.

The gateway, as root, never follows a link inside a folder an engine user
owns: folders there are made by a process run as that user (``prepare_as``),
and root only creates and hands over folders whose parent is root's.
"""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from connect_plugin.config import Config
from connect_plugin.errors import ConfigError, EnvironmentProblem
from connect_plugin.server.sessions.private_files import PASSABLE_MODE, folder_with_mode
from connect_plugin.spark_processes.process_users import as_user, user_options

OWN_MODE = 0o700
SHELL = "/bin/sh"
PREPARE_TIMEOUT_S = 30.0
_PREPARE = r"""
for item in "$@"; do
  path=${item#?:}
  case $item in
    d:*) mkdir -p -m 700 -- "$path" 2>/dev/null || { printf 'create %s' "$path"; exit 3; } ;;
    r:*) [ -r "$path" ] || { printf 'read %s' "$path"; exit 3; } ;;
    x:*) [ -x "$path" ] || { printf 'run or enter %s' "$path"; exit 3; } ;;
  esac
done
"""


@dataclass(frozen=True)
class EngineUser:
    """An operating-system user an engine runs as."""

    name: str
    uid: int
    gid: int

    @property
    def ids(self) -> tuple[int, int]:
        return self.uid, self.gid


def engine_users(config: Config, euid: int | None = None) -> dict[str, EngineUser]:
    """The operating-system user of each owner's engine (``engine_os_users``), by owner;
    ``ConfigError`` when the gateway is not root or a user does not exist or is root."""
    names = config.os_users_of_engines
    if not names:
        return {}
    euid = os.geteuid() if euid is None else euid
    if euid != 0:
        raise ConfigError(
            f"engine_os_users runs each engine as an operating-system user of its own, which "
            f"only a gateway run as root can start (this one runs as uid {euid}); start the "
            "gateway as root, or remove engine_os_users to run every engine as the gateway's user"
        )
    users = {}
    for owner, name in names.items():
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise ConfigError(
                f"engine_os_users: the operating-system user {name!r} of {owner!r} does not "
                f"exist; create it (useradd --system --no-create-home {name})"
            ) from None
        if entry.pw_uid == 0:
            raise ConfigError(
                f"engine_os_users: {name!r} of {owner!r} is root; give each engine an "
                "unprivileged user of its own"
            )
        users[owner] = EngineUser(name, entry.pw_uid, entry.pw_gid)
    return users


def passable_folder(path: Path) -> None:
    """Create ``path`` (and missing parents) as a folder others may pass through: ``0711``."""
    try:
        folder_with_mode(path, PASSABLE_MODE)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot create the folder [{path}]: {exc.strerror}") from exc


def own_folder(path: Path, user: EngineUser) -> None:
    """Create ``path``, in a folder only root writes, as ``user``'s own (``0700``); an
    existing one is made so (a link there is refused), with everything in it (an engine's
    folder from a run as the gateway's user, or as another user: no link is followed)."""
    try:
        path.mkdir(mode=OWN_MODE, exist_ok=True)
        found = os.lstat(path)
        if not stat.S_ISDIR(found.st_mode):
            raise EnvironmentProblem(f"[{path}] is not a folder; remove it")
        if (found.st_uid, found.st_gid) != user.ids:
            for _parent, dirs, files, directory in os.fwalk(path):
                os.chown(directory, user.uid, user.gid)
                for name in (*dirs, *files):
                    os.chown(name, user.uid, user.gid, dir_fd=directory, follow_symlinks=False)
        if stat.S_IMODE(found.st_mode) != OWN_MODE:
            os.chmod(path, OWN_MODE)
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot give the folder [{path}] to {user.name!r}: {exc.strerror}"
        ) from exc


def prepare_as(
    user: EngineUser,
    owner: str,
    folders: Iterable[Path] = (),
    readable: Iterable[Path] = (),
    runnable: Iterable[Path] = (),
) -> None:
    """As ``user``: create ``folders`` (``0700``, its own), and check that it can read
    ``readable`` and run (or enter) ``runnable``; ``EnvironmentProblem`` naming the first
    path it cannot, with what to do."""
    items = [f"d:{p}" for p in folders] + [f"r:{p}" for p in readable]
    items += [f"x:{p}" for p in runnable]
    done = subprocess.run(
        as_user([SHELL, "-c", _PREPARE, SHELL, *items], user.ids),
        **user_options(user.ids),
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=PREPARE_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        what = done.stdout.strip() or done.stderr.strip() or f"exit code {done.returncode}"
        raise EnvironmentProblem(
            f"the engine of {owner!r} cannot start as operating-system user {user.name!r}: "
            f"it cannot {what}; let that user reach it (chmod o+rx on it, o+x on the folders "
            "above it) or install Java, pyspark and connect-plugin where every user reads them"
        )
