"""Which files a scan reads, where each one sits, and how they split into Spark partitions.

Each file remembers its scan root: the directory a path named, or for a glob
the directory before the first wildcard segment, or for a single file its
own directory. Positional partition columns (``dir0``, ``dir1``, ...) are the
directories between the root and the file, as in Drill. Files and
directories whose names start with ``.`` or ``_`` (``_SUCCESS``, ``.crc``,
``_temporary``) are skipped below a root, as Spark and Drill skip them.

The order is deterministic: the paths in the order given, each expanded in
sorted order, a file listed twice kept at its first place. Partitions are
contiguous runs of that order, balanced by bytes, so that reading the
partitions one after the other gives the files in order.
"""

from __future__ import annotations

import fnmatch
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyarrow.fs as pafs

from connect_plugin.errors import ScanPathNotFound
from connect_plugin.scanning.files.storage import Storage, fs_path, open_storage

GLOB_CHARACTERS = frozenset("*?[")

TARGET_GROUP_BYTES = 128 * 1024 * 1024
"""Bytes a partition aims at, like Spark's spark.sql.files.maxPartitionBytes."""


@dataclass(frozen=True)
class ScanFile:
    """One file of a scan: its path on its file system, scan root, size and modification time.

    ``scheme`` is the URL scheme of an object store (``s3://``), empty for local files.
    """

    path: str
    root: str
    size: int
    mtime_ns: int
    scheme: str = ""

    @property
    def url(self) -> str:
        """Where the file is, as users name it: the local path, or ``s3://bucket/key``."""
        return f"{self.scheme}{self.path}" if self.scheme else self.path

    @property
    def dirs(self) -> tuple[str, ...]:
        """The directories between the scan root and the file, outermost first."""
        relative = os.path.relpath(os.path.dirname(self.path), self.root)
        if relative == os.curdir:
            return ()
        return tuple(relative.split(os.sep))


def list_files(paths: Sequence[str], storage: Storage | None = None) -> list[ScanFile]:
    """Expand paths, directories and globs to files; a path that matches nothing is an error."""
    storage = storage or open_storage(paths, {})
    seen: set[str] = set()
    files: list[ScanFile] = []
    for path in paths:
        for found in _expand(storage, path):
            if found.path not in seen:
                seen.add(found.path)
                files.append(found)
    return files


def _expand(storage: Storage, path: str) -> list[ScanFile]:
    filesystem = storage.filesystem
    absolute = fs_path(path, storage)
    where = "the Spark server's file system" if storage.is_local else "the object store"
    segments = absolute.split(os.sep)
    first_glob = next(
        (index for index, segment in enumerate(segments) if GLOB_CHARACTERS & set(segment)), None
    )
    if first_glob is None:
        info = _info(filesystem, absolute, path)
        if info.type == pafs.FileType.File:
            return [_scan_file(info, os.path.dirname(absolute), storage)]
        if info.type == pafs.FileType.Directory:
            return _walk(storage, absolute)
        raise ScanPathNotFound(
            f"path '{path}' does not exist (looked for {absolute}); check the path, "
            f"which is read on {where}"
        )
    root = os.sep.join(segments[:first_glob]) or os.sep
    pattern = segments[first_glob:]
    if _info(filesystem, root, path).type != pafs.FileType.Directory:
        raise ScanPathNotFound(
            f"glob '{path}' matches nothing: its directory {root} does not exist"
        )
    matched = [
        found
        for found in _walk(storage, root)
        if _glob_matches(pattern, os.path.relpath(found.path, root).split(os.sep))
    ]
    if not matched:
        raise ScanPathNotFound(
            f"glob '{path}' matches no file under {root}; check the pattern "
            "(* and ? stay within one directory level)"
        )
    return matched


def _info(filesystem: pafs.FileSystem, path: str, named: str) -> pafs.FileInfo:
    try:
        return filesystem.get_file_info(path)
    except OSError as exc:
        raise ScanPathNotFound(f"path '{named}' cannot be looked up: {exc}") from exc


def _walk(storage: Storage, root: str) -> list[ScanFile]:
    selector = pafs.FileSelector(root, recursive=True)
    try:
        infos = storage.filesystem.get_file_info(selector)
    except OSError as exc:
        raise ScanPathNotFound(f"cannot list {storage.scheme}{root}: {exc}") from exc
    files = [
        _scan_file(info, root, storage)
        for info in infos
        if info.type == pafs.FileType.File and not _hidden(os.path.relpath(info.path, root))
    ]
    files.sort(key=lambda found: found.path.split(os.sep))
    return files


def _hidden(relative: str) -> bool:
    return any(part.startswith((".", "_")) for part in relative.split(os.sep))


def _glob_matches(pattern: list[str], parts: list[str]) -> bool:
    """A glob matches a file itself or a directory above it (then every file inside)."""
    if len(parts) < len(pattern):
        return False
    return all(
        fnmatch.fnmatchcase(part, segment) for part, segment in zip(parts, pattern, strict=False)
    )


def _scan_file(info: pafs.FileInfo, root: str, storage: Storage) -> ScanFile:
    return ScanFile(
        path=os.path.normpath(info.path),
        root=root,
        size=int(info.size or 0),
        mtime_ns=int(info.mtime_ns or 0),
        scheme=storage.scheme,
    )


def file_groups(
    files: Sequence[ScanFile],
    *,
    min_groups: int = 1,
    target_bytes: int = TARGET_GROUP_BYTES,
) -> list[list[ScanFile]]:
    """Cut the files, in order, into runs of about equal bytes.

    There are enough runs for ``target_bytes`` each and at least
    ``min_groups`` (usually the cores available), never more runs than
    files. A file is never split.
    """
    if not files:
        return []
    total = sum(max(found.size, 1) for found in files)
    count = max(min_groups, math.ceil(total / max(target_bytes, 1)))
    count = max(1, min(count, len(files)))
    groups: list[list[ScanFile]] = []
    current: list[ScanFile] = []
    done = 0
    for index, found in enumerate(files):
        current.append(found)
        done += max(found.size, 1)
        groups_left = count - len(groups) - 1
        files_left = len(files) - index - 1
        boundary = total * (len(groups) + 1) / count
        if groups_left and (done >= boundary or files_left == groups_left):
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


def max_depth(files: Iterable[ScanFile]) -> int:
    """The deepest file's number of directories below its root: how many dirN columns exist."""
    return max((len(found.dirs) for found in files), default=0)
