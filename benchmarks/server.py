"""Which Spark Connect server a benchmark measures: an embedded stack, or one given by address.

``--remote sc://host:port`` points the scan and temp-table benchmarks at a
running gateway (a cluster, a container) instead of starting the embedded
stack, so the same figures can be read side by side. Their input and output
files must be where that server's driver and executors find them at the same
path: ``--shared-dir`` names such a folder (by default a temporary folder of
this machine, right when the server shares its file system).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from connect_plugin.config import Config
from connect_plugin.server.stack import Stack


@dataclass(frozen=True)
class Options:
    """What ``./dev bench`` was told about the server."""

    remote: str | None = None
    """The gateway's ``sc://`` address; None: start the embedded stack."""
    shared_dir: Path | None = None
    """A folder the server reads and writes at the same path as this process."""
    workspace: Path | None = None
    """The remote gateway's workspace, when this process sees it (checks release)."""


@dataclass(frozen=True)
class Server:
    """The gateway a benchmark talks to."""

    address: str
    workspace: Path | None
    label: str


@contextlib.contextmanager
def shared_folder(options: Options, prefix: str) -> Iterator[Path]:
    """A new folder for a benchmark's files, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=prefix, dir=options.shared_dir) as folder:
        yield Path(folder)


@contextlib.contextmanager
def gateway(options: Options, scratch: Path) -> Iterator[Server]:
    """The remote gateway, or an embedded stack with its workspace and log under ``scratch``."""
    if options.remote is not None:
        yield Server(options.remote, options.workspace, f"remote {options.remote}")
        return
    config = Config(
        local=True,
        port=0,
        workspace=scratch / "workspace",
        state_dir=scratch / "state",
        conf_dir=None,
    )
    with Stack(config) as stack:
        assert stack.gateway is not None
        yield Server(stack.gateway.address, config.workspace, "embedded (local[*])")
