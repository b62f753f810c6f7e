"""The temporary workspace: one private folder per session, one per table.

Layout: ``<root>/<session_id>/<uuid>/``. The uuid masks the table name. Spark
writes files with its own modes (0644 / 0755 whatever the session's umask
setting says), so after every write the gateway walks the table folder and
sets folders to 0700 and files to 0600; the session folder is created 0700
before Spark writes into it, so nobody else can look inside in the meantime.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import uuid
from pathlib import Path

from connect_plugin.errors import WorkspaceError

log = logging.getLogger(__name__)

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def _checked_session_id(session_id: str) -> str:
    try:
        return str(uuid.UUID(session_id))
    except ValueError:
        raise WorkspaceError(
            f"session id [{session_id}] is not a UUID; Spark Connect session ids always are"
        ) from None


class Workspace:
    """Creates, secures, measures and deletes session and table folders."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def session_folder(self, session_id: str) -> Path:
        return self.root / _checked_session_id(session_id)

    def new_table_folder(self, session_id: str) -> Path:
        """A fresh, not yet existing table folder inside the (created) session folder."""
        session = self.session_folder(session_id)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            session.mkdir(mode=FOLDER_MODE, exist_ok=True)
            os.chmod(session, FOLDER_MODE)
        except OSError as exc:
            raise WorkspaceError(
                f"cannot create the session folder [{session}]: {exc.strerror}; check that "
                "the workspace root exists and the gateway may write to it"
            ) from exc
        return session / str(uuid.uuid4())

    @staticmethod
    def secure(folder: Path) -> None:
        """Give every folder below ``folder`` (itself included) 0700 and every file 0600."""
        try:
            os.chmod(folder, FOLDER_MODE)
            for parent, dirs, files in os.walk(folder):
                for name in dirs:
                    os.chmod(os.path.join(parent, name), FOLDER_MODE)
                for name in files:
                    os.chmod(os.path.join(parent, name), FILE_MODE)
        except OSError as exc:
            raise WorkspaceError(f"cannot set the modes of [{folder}]: {exc}") from exc

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
