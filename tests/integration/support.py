"""Shared pieces of the integration tests (fixtures live in conftest.py)."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.config import Config
from connect_plugin.server.gateway import Gateway, serve
from connect_plugin.server.sessions.workspace import Workspace

# Small enough that any result of a few MB is split over several streams,
# so every test run also exercises ReattachExecute through the gateway.
SENDER_MAX_STREAM_SIZE = 1024 * 1024
TEST_SPARK_CONF = {
    "spark.connect.execute.reattachable.senderMaxStreamSize": str(SENDER_MAX_STREAM_SIZE),
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
}


def pause(ms: int) -> str:
    """A SQL condition that is true ``ms`` milliseconds after it is asked for each row: a
    statement as long as a test needs, that leaves the machine's cores to other work (Java's
    ``Thread.sleep`` through ``reflect``, which answers the string ``null``)."""
    return f"reflect('java.lang.Thread', 'sleep', CAST({ms} AS BIGINT)) IS NOT NULL"


@dataclass(frozen=True)
class Upstream:
    address: str
    embedded: bool
    log_path: Path | None = None


@contextmanager
def serving(upstream: Upstream, workspace: Path, **settings: object) -> Iterator[Gateway]:
    """A gateway of its own in front of ``upstream``, on a free port, with ``settings``.

    Like ``--local``, it stops the Python workers of the sessions that end when the
    upstream is the embedded server of this test session, which runs on this machine.
    """
    settings = {"stop_python_workers": upstream.embedded, **settings}
    config = Config(
        port=0, upstream=upstream.address, workspace=workspace, conf_dir=None, **settings  # type: ignore[arg-type]
    )
    running = serve(config)
    try:
        yield running
    finally:
        running.stop()


def first_seed(config: pytest.Config, option: str) -> int:
    """The hypothesis seed a randomized test's first run takes: ``option``'s, else a random
    one (the test shows it, so that a run that found something can be run again)."""
    given: int | None = config.getoption(option)
    return random.randrange(1 << 32) if given is None else given


def new_session(address: str) -> SparkSession:
    """A fresh Spark Connect session (never the process-wide default one)."""
    return SparkSession.builder.remote(address).create()


def session_folder(workspace: Path, spark: SparkSession) -> Path:
    """Where the gateway keeps the temporary tables of ``spark``'s session."""
    return workspace / spark.client._session_id


def table_folders(workspace: Path, spark: SparkSession) -> list[Path]:
    """The table folders of the session (not ``.scans``, where its scans keep their plans)."""
    folder = session_folder(workspace, spark)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def assert_private(folder: Path) -> int:
    """Every folder from ``folder`` down is 0700 and every file 0600; returns the file count."""
    files = 0
    for path, mode in Workspace.modes(folder).items():
        expected = 0o700 if path.is_dir() else 0o600
        assert mode == expected, f"{path} has mode {mode:o}, expected {expected:o}"
        files += path.is_file()
    return files


def temp_table_names(spark: SparkSession) -> list[str]:
    return [row["name"] for row in spark.sql("SHOW TEMPORARY TABLES").collect()]


def spark_connect_server_pids(mentioning: str = "") -> set[int]:
    """Process ids of the Spark Connect server JVMs on this machine (those whose command
    line mentions ``mentioning``)."""
    pids = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            wanted = (b"SparkConnectServer", b"java", mentioning.encode())
            if all(word in cmdline for word in wanted):
                pids.add(int(proc.name))
    return pids


def json_parts(root: Path, parts: int, rows: int) -> Path:
    """``parts`` json-lines files in ``root``, ``{"id", "part"}`` rows, ``rows`` in each."""
    for index in range(parts):
        lines = (json.dumps({"id": i, "part": index}) for i in range(rows))
        (root / f"{index}.json").write_text("\n".join(lines) + "\n")
    return root


def embedded_jvm(upstream: Upstream) -> int:
    """The pid of the test session's embedded Spark Connect server."""
    assert upstream.log_path is not None
    (jvm,) = spark_connect_server_pids(mentioning=str(upstream.log_path.parent))
    return jvm


def reattachable(session_id: str, user_id: str, sql: str) -> spark_proto.ExecutePlanRequest:
    """A reattachable ExecutePlan of ``sql`` in a new operation, as pyspark sends one."""
    request = spark_proto.ExecutePlanRequest(
        session_id=session_id,
        user_context=spark_proto.UserContext(user_id=user_id),
        operation_id=str(uuid.uuid4()),
    )
    request.plan.command.sql_command.input.sql.query = sql
    request.request_options.add().reattach_options.reattachable = True
    return request


def reattach_of(
    request: spark_proto.ExecutePlanRequest, last_response_id: str | None = None
) -> spark_proto.ReattachExecuteRequest:
    return spark_proto.ReattachExecuteRequest(
        session_id=request.session_id,
        user_context=request.user_context,
        operation_id=request.operation_id,
        last_response_id=last_response_id,
    )


def release_all_of(request: spark_proto.ExecutePlanRequest) -> spark_proto.ReleaseExecuteRequest:
    release = spark_proto.ReleaseExecuteRequest(
        session_id=request.session_id,
        user_context=request.user_context,
        operation_id=request.operation_id,
    )
    release.release_all.SetInParent()
    return release
