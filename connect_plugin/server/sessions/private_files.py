"""The gateway's own files, readable by its user only.

Folders are 0700 and files 0600. A file's mode is set on the open file
descriptor, so a file made by an earlier run with other modes is fixed at
start, and no path is looked up twice between opening and securing. Files
are opened with ``O_NOFOLLOW``: a symlink planted where a lock or the
registry belongs is refused, not followed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Callable
from pathlib import Path

from connect_plugin.errors import ConnectPluginError, RegistryError, WorkspaceError

FOLDER_MODE = 0o700
FILE_MODE = 0o600
PASSABLE_MODE = 0o711
"""A folder of the gateway's that others may pass through (to a folder of their own) but not
list: the workspace root when engines run as users of their own."""
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")
"""Files SQLite keeps beside a database; it gives new ones the database's mode."""


def folder_with_mode(path: Path, mode: int) -> None:
    """Create ``path`` (and missing parents) and give the folder itself ``mode``; raises
    ``OSError``."""
    path.mkdir(mode=mode, parents=True, exist_ok=True)
    if stat.S_IMODE(os.stat(path).st_mode) != mode:
        os.chmod(path, mode)


def private_folder(path: Path) -> None:
    """Create ``path`` (and missing parents) and make the folder itself 0700."""
    try:
        folder_with_mode(path, FOLDER_MODE)
    except OSError as exc:
        raise WorkspaceError(
            f"cannot create the private folder [{path}]: {exc.strerror}; check that the "
            "gateway may write there"
        ) from exc


def open_private(path: Path, flags: int = os.O_RDWR) -> int:
    """A descriptor of ``path``, created 0600 if missing, made 0600 if not; links refused."""
    fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != FILE_MODE:
            os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd


def secure_file(
    path: Path, *, create: bool, error: type[ConnectPluginError] = WorkspaceError
) -> None:
    """Make ``path`` 0600 (creating it first when ``create``); a missing one is left missing."""
    if not create and not os.path.lexists(path):
        return
    try:
        os.close(open_private(path))
    except OSError as exc:
        raise error(f"cannot make [{path}] private: {_reason(exc)}") from exc


def secure_sqlite(path: Path) -> None:
    """The registry and the journal files SQLite left beside it, 0600 (the registry created)."""
    secure_file(path, create=True, error=RegistryError)
    for suffix in SQLITE_COMPANIONS:
        secure_file(Path(f"{path}{suffix}"), create=False, error=RegistryError)


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "it is a symbolic link; remove the link"
    return exc.strerror or str(exc)


class FileLock:
    """An exclusive ``flock`` on a private file holding the pid of its holder.

    The kernel drops it when the process dies, however it dies, so a
    restarted gateway takes it over at once. ``in_use`` builds the error for
    a second claimant from the holder's pid ("" when unknown).
    """

    def __init__(self, path: Path, in_use: Callable[[str], ConnectPluginError]) -> None:
        self.path = path
        try:
            self._fd: int | None = open_private(path)
        except OSError as exc:
            raise WorkspaceError(
                f"cannot create the lock file [{path}]: {_reason(exc)}; check that the "
                "gateway may write to its folder"
            ) from exc
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = self._holder()
            self.release()
            raise in_use(holder) from None
        os.ftruncate(self._fd, 0)
        os.write(self._fd, f"{os.getpid()}\n".encode())

    def _holder(self) -> str:
        assert self._fd is not None
        with contextlib.suppress(OSError):
            return os.pread(self._fd, 32, 0).decode(errors="replace").strip()
        return ""

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
