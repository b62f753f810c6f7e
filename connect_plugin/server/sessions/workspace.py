"""The temporary workspace: one private folder per session, one per table.

Layout: ``<root>/<session_id>/<uuid>/``. The uuid masks the table name. Spark
writes files with its own modes (0644 / 0755 whatever the session's umask
setting says), so after every write the gateway walks the table folder and
sets folders to 0700 and files to 0600; the session folder is created 0700
before Spark writes into it, so nobody else can look inside in the meantime.

Session and table folders always have UUID names; the gateway's own files
(the registry, the lock) live in ``<root>/.connect-plugin/``, and the plans
a session's scans keep in ``<root>/<session_id>/.scans/``, which no listing
of sessions or tables ever returns.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import stat
import uuid
from collections.abc import Callable
from pathlib import Path

from connect_plugin.errors import RegistryInUse, WorkspaceError, WorkspaceInUse
from connect_plugin.server.sessions.private_files import (
    FILE_MODE,
    FOLDER_MODE,
    FileLock,
    private_folder,
)

log = logging.getLogger(__name__)

PRIVATE_DIR = ".connect-plugin"
LOCK_FILE = "gateway.lock"
REGISTRY_FILE = "registry.sqlite3"
SCANS_DIR = ".scans"
"""In a session's folder: the plans its scans keep (``connect_plugin.scanning.planning.kept``),
which no listing of tables returns."""
_NO_LINKS = frozenset((errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP))
"""Errors of ``link`` that a copy gets around (other devices, no link support, too many)."""


def _checked_session_id(session_id: str) -> str:
    """The folder name of a session: its id, which must already be a canonical UUID."""
    if not _is_uuid(session_id):
        raise WorkspaceError(
            f"session id [{session_id}] is not a canonical UUID (lower-case 8-4-4-4-12 hex); "
            "the workspace keeps no folder for it"
        )
    return session_id


def _is_uuid(name: str) -> bool:
    """Whether ``name`` is a UUID as the gateway writes them (canonical, lower case)."""
    try:
        return str(uuid.UUID(name)) == name
    except ValueError:
        return False


class WorkspaceLock:
    """An exclusive lock on ``<root>/.connect-plugin/gateway.lock``, held while open.

    A registry kept outside the workspace (``registry_path``) gets its own
    ``<registry>.lock`` too, so two gateways with different workspaces still
    never share one registry. Lock files hold the holder's pid, for the
    error message of a second gateway.
    """

    def __init__(self, root: Path, registry: Path | None = None) -> None:
        self.root = root
        self.path = root / PRIVATE_DIR / LOCK_FILE
        private_folder(root)
        private_folder(root / PRIVATE_DIR)
        self._locks = [FileLock(self.path, self._workspace_in_use)]
        if registry is not None and not _inside(registry, root):
            try:
                registry.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
                self._locks.append(FileLock(Path(f"{registry}.lock"), _registry_in_use(registry)))
            except BaseException:
                self.release()
                raise

    def _workspace_in_use(self, holder: str) -> WorkspaceInUse:
        return WorkspaceInUse(
            f"the workspace [{self.root}] is in use by another gateway"
            + (f" (pid {holder})" if holder else "")
            + "; stop that gateway or give this one its own --workspace"
        )

    def release(self) -> None:
        for lock in reversed(self._locks):
            lock.release()


def _registry_in_use(registry: Path) -> Callable[[str], RegistryInUse]:
    def in_use(holder: str) -> RegistryInUse:
        return RegistryInUse(
            f"the session registry [{registry}] is in use by another gateway"
            + (f" (pid {holder})" if holder else "")
            + "; stop that gateway or give this one its own registry_path"
        )

    return in_use


def _inside(path: Path, root: Path) -> bool:
    return Path(path).absolute().is_relative_to(Path(root).absolute())


class Workspace:
    """Creates, secures, measures and deletes session and table folders."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).absolute()

    @property
    def private_folder(self) -> Path:
        """The gateway's own files: registry, lock."""
        return self.root / PRIVATE_DIR

    def lock(self, registry: Path | None = None) -> WorkspaceLock:
        """Claim the workspace (and a registry kept elsewhere) for this gateway.

        ``WorkspaceInUse`` or ``RegistryInUse`` when another gateway has it.
        """
        return WorkspaceLock(self.root, registry)

    def session_ids(self) -> list[str]:
        """The session folders present, by session id (dot-names and strays left out)."""
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return []
        return sorted(
            e.name for e in entries if e.is_dir(follow_symlinks=False) and _is_uuid(e.name)
        )

    def table_folders(self, session_id: str) -> list[Path]:
        """The table folders present in a session's folder."""
        folder = self.session_folder(session_id)
        try:
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            return []
        return sorted(
            folder / e.name for e in entries if e.is_dir(follow_symlinks=False) and _is_uuid(e.name)
        )

    def session_folder(self, session_id: str) -> Path:
        return self.root / _checked_session_id(session_id)

    def new_table_folder(self, session_id: str) -> Path:
        """A fresh, not yet existing table folder inside the (created) session folder."""
        return self._made_session_folder(session_id) / str(uuid.uuid4())

    def scans_folder(self, session_id: str) -> Path:
        """The (created) folder of the plans the session's scans keep (``SCANS_DIR``)."""
        folder = self._made_session_folder(session_id) / SCANS_DIR
        try:
            folder.mkdir(mode=FOLDER_MODE, exist_ok=True)
        except OSError as exc:
            raise WorkspaceError(
                f"cannot create the folder of the session's scans [{folder}]: {exc.strerror}; "
                "check that the gateway may write to the workspace"
            ) from exc
        return folder

    def _made_session_folder(self, session_id: str) -> Path:
        session = self.session_folder(session_id)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            session.mkdir(mode=FOLDER_MODE, exist_ok=True)
            # Only when needed: an existing folder's trouble is then Spark's to report, with the path.
            if stat.S_IMODE(os.stat(session).st_mode) != FOLDER_MODE:
                os.chmod(session, FOLDER_MODE)
        except OSError as exc:
            raise WorkspaceError(
                f"cannot create the session folder [{session}]: {exc.strerror}; check that "
                "the workspace root exists and the gateway may write to it"
            ) from exc
        return session

    @staticmethod
    def secure(folder: Path) -> int:
        """Give every folder below ``folder`` (itself included) 0700 and every file 0600; the
        bytes of its data files, measured on the way (as ``size`` does). A file or folder
        that goes away meanwhile (a temporary file a scan's rejects were written to, renamed
        into place) is passed over."""
        total = 0
        try:
            os.chmod(folder, FOLDER_MODE)
            for parent, dirs, files in os.walk(folder):
                for name in dirs:
                    with contextlib.suppress(FileNotFoundError):
                        os.chmod(os.path.join(parent, name), FOLDER_MODE)
                for name in files:
                    path = os.path.join(parent, name)
                    with contextlib.suppress(FileNotFoundError):
                        os.chmod(path, FILE_MODE)
                        if not name.startswith((".", "_")):
                            total += os.stat(path).st_size
        except OSError as exc:
            raise WorkspaceError(f"cannot set the modes of [{folder}]: {exc}") from exc
        return total

    @staticmethod
    def copy_table(source: Path, target: Path) -> int:
        """Give the new folder ``target`` the files of the table folder ``source``.

        Files are hard-linked (no data is copied; Spark never changes a
        written file, it only adds and deletes files), or copied where the
        file system refuses links. Each side can then delete its folder
        without touching the other's data. Unfinished output (Spark's
        ``_temporary``, hidden folders such as ``.spark-staging-*`` and the
        ``.writing`` folder of a scan's rejects) is left out. Returns the
        number of files.
        """

        def missing(error: OSError) -> None:
            raise error

        files = 0
        try:
            os.mkdir(target, FOLDER_MODE)
            for parent, dirs, names in os.walk(source, onerror=missing):
                dirs[:] = [d for d in dirs if d != "_temporary" and not d.startswith(".")]
                here = target / os.path.relpath(parent, source)
                for name in dirs:
                    os.mkdir(here / name, FOLDER_MODE)
                for name in names:
                    original = os.path.join(parent, name)
                    try:
                        os.link(original, here / name, follow_symlinks=False)
                    except OSError as exc:
                        if exc.errno not in _NO_LINKS:
                            raise
                        shutil.copy2(original, here / name, follow_symlinks=False)
                    files += 1
        except OSError as exc:
            raise WorkspaceError(
                f"cannot copy [{source}] to [{target}]: "
                f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")
            ) from exc
        return files

    @staticmethod
    def size(folder: Path) -> int:
        """Bytes of the data files below ``folder`` (Spark's hidden files left out)."""
        total = 0
        for parent, _dirs, files in os.walk(folder):
            for name in files:
                if not name.startswith((".", "_")):
                    total += os.stat(os.path.join(parent, name)).st_size
        return total

    @staticmethod
    def remove(folder: Path) -> bool:
        """Delete ``folder`` and everything below it; False when it was already gone."""
        try:
            shutil.rmtree(folder)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise WorkspaceError(f"cannot delete [{folder}]: {exc}") from exc
        return True

    def remove_session(self, session_id: str) -> Path | None:
        """Delete a session's whole folder; the path when something was deleted."""
        folder = self.session_folder(session_id)
        if self.remove(folder):
            log.info("Deleted session temporary location [%s]", folder)
            return folder
        return None

    @staticmethod
    def modes(folder: Path) -> dict[Path, int]:
        """The permission bits of everything below ``folder``, for checks and tests."""
        found = {folder: stat.S_IMODE(os.stat(folder).st_mode)}
        for parent, dirs, files in os.walk(folder):
            for name in (*dirs, *files):
                path = Path(parent, name)
                found[path] = stat.S_IMODE(os.stat(path).st_mode)
        return found
