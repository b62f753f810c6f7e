"""What the engines tests share: the users' tokens, a gateway of share level ``user``
starting real engines in a folder, and a client session of one user."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from connect_plugin.config import Config
from connect_plugin.server.gateway import Gateway, serve
from tests.integration.support import TEST_SPARK_CONF, spark_connect_server_pids

TOKENS = {user: f"{user}-{secrets.token_urlsafe(24)}" for user in ("alice", "bob", "carol")}
ENGINE_MEMORY = "512m"


def tokens_file(folder: Path, groups: dict[str, str] | None = None) -> Path:
    """The gateway's tokens file: every user of ``TOKENS``, with its groups if any."""
    groups = groups or {}
    path = folder / "tokens"
    path.write_text(
        "".join(f"{user} {token} {groups.get(user, '')}\n" for user, token in TOKENS.items())
    )
    path.chmod(0o600)
    return path


@contextmanager
def engines_gateway(
    folder: Path, groups: dict[str, str] | None = None, **settings: object
) -> Iterator[Gateway]:
    """A gateway of share level ``user`` (or what ``settings`` say) starting its engines
    here; on leaving, no engine of it may be left running."""
    values: dict[str, object] = dict(
        port=0,
        local=True,
        share_level="user",
        auth_tokens_file=tokens_file(folder, groups),
        workspace=folder / "workspace",
        state_dir=folder / "state",
        conf_dir=None,
        engine_driver_memory=ENGINE_MEMORY,
        warm_up=False,
        class_archive=False,
        stop_python_workers=True,
    )
    values.update(settings)
    gateway = serve(Config(**values), engine_conf=TEST_SPARK_CONF)  # type: ignore[arg-type]
    try:
        yield gateway
    finally:
        gateway.stop()
        assert spark_connect_server_pids(str(folder)) == set()


@contextmanager
def session_of(gateway: Gateway, user: str) -> Iterator[SparkSession]:
    address = f"sc://localhost:{gateway.port}/;token={TOKENS[user]}"
    spark = SparkSession.builder.remote(address).create()
    try:
        yield spark
    finally:
        spark.stop()
