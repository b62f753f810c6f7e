"""Where a scan's files live: the local file system or any file system pyarrow.fs knows.

A path without a scheme (or ``file://``) is local; its streams are read,
not memory-mapped, since the mapped pages of a file read from start to end
stay in the reading process's resident memory until it closes the file. ``s3://bucket/prefix``
reads an S3-compatible object store through ``pyarrow.fs.S3FileSystem``:
its endpoint, region and credentials come from the scan's storage options
(``s3.endpoint``, ``s3.region``, ``s3.access_key``, ``s3.secret_key``,
``s3.session_token``) or, when none is given, from the usual environment
variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_ENDPOINT_URL``, ``AWS_REGION``, ...) of the process that reads, as
the AWS SDK finds them. Any other scheme goes to
``pyarrow.fs.FileSystem.from_uri`` (``gs://``, ``hdfs://``, ...).

Storage options are secrets, endpoint included: they never enter the
spec's JSON, its ``repr`` or a log line. The gateway hands them to Spark as
separate data source options whose names contain ``secret``, which Spark
redacts wherever it prints a plan (``spark.redaction.regex``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow.fs as pafs

from connect_plugin.errors import InvalidScanSpec

STORAGE_PREFIX = "s3."
"""Options with this prefix configure the object store, not the format's reader."""

S3_OPTIONS = {
    "s3.endpoint": "endpoint_override",
    "s3.region": "region",
    "s3.access_key": "access_key",
    "s3.secret_key": "secret_key",
    "s3.session_token": "session_token",
}
"""Storage option -> ``pyarrow.fs.S3FileSystem`` argument."""

SECRET_OPTION_PREFIX = "secret."
"""Prefix of the data source options that carry storage options past Spark's redaction."""

LOCAL_SCHEMES = ("", "file")


@dataclass(frozen=True)
class Storage:
    """The file system of a scan, and the URL scheme its files are named with."""

    filesystem: pafs.FileSystem
    scheme: str
    """``s3://`` and the like; empty for local files, which are named by their path."""

    @property
    def is_local(self) -> bool:
        return not self.scheme


def split_storage_options(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``options`` as (reader options, storage options); storage option names are checked."""
    reader: dict[str, str] = {}
    storage: dict[str, str] = {}
    for key, value in options.items():
        name = key.lower()
        if not name.startswith(STORAGE_PREFIX):
            reader[key] = value
            continue
        if name not in S3_OPTIONS:
            known = ", ".join(S3_OPTIONS)
            raise InvalidScanSpec(f"option '{key}' is not a storage option (options: {known})")
        storage[name] = value
    return reader, storage


def scheme_of(path: str) -> str:
    """``s3`` for ``s3://b/k``; empty for a plain path (Windows drive letters are no scheme)."""
    head, separator, _ = path.partition("://")
    return head.lower() if separator and len(head) > 1 and "/" not in head else ""


def open_storage(paths: Sequence[str], options: Mapping[str, str]) -> Storage:
    """The one file system every path of a scan is on; an error names a path that is not."""
    schemes = {scheme_of(path) for path in paths}
    local = {scheme if scheme not in LOCAL_SCHEMES else "" for scheme in schemes}
    if len(local) > 1:
        raise InvalidScanSpec(
            f"the paths of one scan must be on one file system; got schemes {sorted(schemes)} "
            "(scan them apart and union the results)"
        )
    (scheme,) = local or {""}
    if not scheme:
        if options:
            raise InvalidScanSpec(
                f"storage options {sorted(options)} need s3:// paths; these paths are local"
            )
        return Storage(pafs.LocalFileSystem(use_mmap=False), "")
    if scheme == "s3" and options:
        arguments = {S3_OPTIONS[name]: value for name, value in options.items()}
        endpoint = arguments.get("endpoint_override", "")
        if endpoint.startswith("http://"):
            arguments["scheme"] = "http"
        return Storage(pafs.S3FileSystem(**arguments), "s3://")
    if options:
        raise InvalidScanSpec(f"storage options {sorted(options)} apply to s3:// paths only")
    try:
        filesystem, _ = pafs.FileSystem.from_uri(paths[0])
    except (OSError, ValueError) as exc:
        raise InvalidScanSpec(
            f"path '{paths[0]}': pyarrow.fs cannot open its file system ({exc}); check the "
            "scheme, and the credentials in the environment of Spark's workers"
        ) from exc
    return Storage(filesystem, f"{scheme}://")


def fs_path(path: str, storage: Storage) -> str:
    """A path as its file system names it: absolute for local paths, ``bucket/key`` for s3."""
    if storage.is_local:
        if path.startswith("file://"):
            path = path[len("file://") :]
        return os.path.normpath(os.path.abspath(os.path.expanduser(path)))
    return path.partition("://")[2].rstrip("/")


def options_digest(options: Mapping[str, str]) -> str:
    """A digest that tells storage options apart (for cache keys) without holding them."""
    text = json.dumps(dict(options), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
