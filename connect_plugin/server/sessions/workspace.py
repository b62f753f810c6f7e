"""The temporary workspace: one private folder per session, one per table.

Layout: ``<root>/<session_id>/<uuid>/``. The uuid masks the table name. Spark
writes files with its own modes (0644 / 0755 whatever the session's umask
setting says), so after every write the gateway walks the table folder and
sets folders to 0700 and files to 0600; the session folder is created 0700
before Spark writes into it, so nobody else can look inside in the meantime.

With engines run as operating-system users of their own (a gateway run as
root), a session's folder belongs to its engine's user, and the root is
``0711``: each engine reaches its sessions' folders and no other's, and
lists none. The gateway then never follows a link below a session folder:
modes are set through descriptors opened without following links.

Session and table folders always have UUID names; the gateway's own files
(the registry, the lock) live in ``<root>/.connect-plugin/``, and the plans
a session's scans keep in ``<root>/<session_id>/.scans/``, which no listing
of sessions or tables ever returns.
"""

from __future__ import annotations

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
    PASSABLE_MODE,
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
_REMOVE_ATTEMPTS = 20
"""Deletions of a folder that files keep coming into before the gateway gives up."""
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


def _secure_file(name: str, directory: int) -> int:
    """Make the regular file ``name`` of the open folder ``directory`` 0600; its bytes (0 for
    a link, a socket, a pipe or a file gone meanwhile, which are left as they are)."""
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory
        )
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENXIO):
            return 0
        raise
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            return 0
        if stat.S_IMODE(found.st_mode) != FILE_MODE:
            os.fchmod(fd, FILE_MODE)
        return found.st_size
    finally:
        os.close(fd)


class WorkspaceLock:
    """An exclusive lock on ``<root>/.connect-plugin/gateway.lock``, held while open.

    A registry kept outside the workspace (``registry_path``) gets its own
    ``<registry>.lock`` too, so two gateways with different workspaces still
    never share one registry. Lock files hold the holder's pid, for the
    error message of a second gateway.
    """

    def __init__(self, root: Path, registry: Path | None = None, passable: bool = False) -> None:
        """``passable``: the root may be passed through by others (``0711``), for engines
        run as users of their own."""
        self.root = root
        self.path = root / PRIVATE_DIR / LOCK_FILE
        private_folder(root)
        if passable:
            _passable(root)
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


def _passable(folder: Path) -> None:
    try:
        os.chmod(folder, PASSABLE_MODE)
    except OSError as exc:
        raise WorkspaceError(f"cannot set the mode of [{folder}]: {exc.strerror}") from exc


def _inside(path: Path, root: Path) -> bool:
    return Path(path).absolute().is_relative_to(Path(root).absolute())


class Workspace:
    """Creates, secures, measures and deletes session and table folders."""

    def __init__(
        self, root: Path, engine_user: Callable[[str], tuple[int, int] | None] | None = None
    ) -> None:
        """``engine_user``: the (uid, gid) a user's engine runs as, when not the gateway's."""
        self.root = Path(root).absolute()
        self._engine_user = engine_user

    def owner_of(self, user: str | None) -> tuple[int, int] | None:
        """The (uid, gid) ``user``'s session folders belong to (None: the gateway's)."""
        if user is None or self._engine_user is None:
            return None
        return self._engine_user(user)

    @property
    def private_folder(self) -> Path:
        """The gateway's own files: registry, lock."""
        return self.root / PRIVATE_DIR

    def lock(self, registry: Path | None = None, passable: bool = False) -> WorkspaceLock:
        """Claim the workspace (and a registry kept elsewhere) for this gateway; ``passable``:
        see ``WorkspaceLock``.

        ``WorkspaceInUse`` or ``RegistryInUse`` when another gateway has it.
        """
        return WorkspaceLock(self.root, registry, passable)

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

    def new_table_folder(self, session_id: str, user: str | None = None) -> Path:
        """A fresh, not yet existing table folder inside the (created) session folder, which
        belongs to the user ``user``'s engine runs as (``owner_of``)."""
        return self._made_session_folder(session_id, user) / str(uuid.uuid4())

    def scans_folder(self, session_id: str, user: str | None = None) -> Path:
        """The (created) folder of the plans the session's scans keep (``SCANS_DIR``), which
        the engine's Python workers write, so ``user``'s engine's user's, as the session's."""
        folder = self._made_session_folder(session_id, user) / SCANS_DIR
        owner = self.owner_of(user)
        try:
            folder.mkdir(mode=FOLDER_MODE, exist_ok=True)
            found = os.lstat(folder)
            if not stat.S_ISDIR(found.st_mode):
                raise WorkspaceError(f"[{folder}] is not a folder; the session's scans keep no plan")
            if owner is not None and (found.st_uid, found.st_gid) != owner:
                os.lchown(folder, *owner)
        except OSError as exc:
            raise WorkspaceError(
                f"cannot create the folder of the session's scans [{folder}]: {exc.strerror}; "
                "check that the gateway may write to the workspace"
            ) from exc
        return folder

    def _made_session_folder(self, session_id: str, user: str | None = None) -> Path:
        session = self.session_folder(session_id)
        owner = self.owner_of(user)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            session.mkdir(mode=FOLDER_MODE, exist_ok=True)
            found = os.lstat(session)
            if owner is not None and (found.st_uid, found.st_gid) != owner:
                os.lchown(session, *owner)
            # Only when needed: an existing folder's trouble is then Spark's to report, with the path.
            if stat.S_IMODE(found.st_mode) != FOLDER_MODE:
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
        into place) is passed over, and so is a link: modes are set through descriptors
        opened without following one, so that code that wrote a link into the folder cannot
        have the gateway change the mode of what it points to."""
        total = 0
        try:
            for _parent, _dirs, files, directory in os.fwalk(folder):
                if stat.S_IMODE(os.fstat(directory).st_mode) != FOLDER_MODE:
                    os.fchmod(directory, FOLDER_MODE)
                for name in files:
                    size = _secure_file(name, directory)
                    if not name.startswith((".", "_")):
                        total += size
        except OSError as exc:
            raise WorkspaceError(f"cannot set the modes of [{folder}]: {exc}") from exc
        return total

    @staticmethod
    def copy_table(source: Path, target: Path, owner: tuple[int, int] | None = None) -> int:
        """Give the new folder ``target`` the files of the table folder ``source``.

        Files are hard-linked (no data is copied; Spark never changes a
        written file, it only adds and deletes files), or copied where the
        file system refuses links. Each side can then delete its folder
        without touching the other's data. Unfinished output (Spark's
        ``_temporary``, hidden folders such as ``.spark-staging-*`` and the
        ``.writing`` folder of a scan's rejects) is left out. Returns the
        number of files. ``owner``: the (uid, gid) the new folders and copied files go to
        (linked files keep theirs).
        """

        def missing(error: OSError) -> None:
            raise error

        files = 0
        def give(path: Path) -> None:
            if owner is not None:
                os.lchown(path, *owner)

        try:
            os.mkdir(target, FOLDER_MODE)
            give(target)
            for parent, dirs, names in os.walk(source, onerror=missing):
                dirs[:] = [d for d in dirs if d != "_temporary" and not d.startswith(".")]
                here = target / os.path.relpath(parent, source)
                for name in dirs:
                    os.mkdir(here / name, FOLDER_MODE)
                    give(here / name)
                for name in names:
                    original = os.path.join(parent, name)
                    try:
                        os.link(original, here / name, follow_symlinks=False)
                    except OSError as exc:
                        if exc.errno not in _NO_LINKS:
                            raise
                        shutil.copy2(original, here / name, follow_symlinks=False)
                        give(here / name)
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
        """Delete ``folder`` and everything below it; False when it was already gone.

        A task of Spark's that a query no longer waits for (a stage it dropped,
        a task killed late) may still write a scan's rejects into the folder,
        and a refresh may delete files in it, while it is deleted: a file that
        comes or goes in the meantime makes the deletion start again. Once the
        folder is gone nothing makes it again (writers never make the folders
        above their own).
        """
        removed = False
        failure: OSError | None = None
        for _ in range(_REMOVE_ATTEMPTS):
            try:
                shutil.rmtree(folder)
            except FileNotFoundError as exc:
                if not os.path.lexists(folder):
                    return removed
                failure = exc
            except OSError as exc:
                if exc.errno != errno.ENOTEMPTY:
                    raise WorkspaceError(f"cannot delete [{folder}]: {exc}") from exc
                failure = exc
            else:
                return True
            removed = True
        raise WorkspaceError(
            f"cannot delete [{folder}]: files kept coming while it was deleted "
            f"({_REMOVE_ATTEMPTS} attempts, last: {failure}); the gateway deletes what is left "
            "when it next starts"
        )

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
