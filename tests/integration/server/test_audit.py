"""The audit log of a scripted session, line by line, and what it never holds.

One JSON line per statement the gateway handles (its kind, table, outcome,
error class) and per refusal, with the token's user: never the token, never
SQL text or the values in it.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from tests.integration.support import Upstream, serving

TOKEN = "alice-" + secrets.token_urlsafe(24)
SECRET_VALUE = "hunter2-" + secrets.token_urlsafe(12)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_scripted_session_audited_field_by_field(upstream: Upstream, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {TOKEN}\n")
    os.chmod(tokens, 0o600)
    audit = tmp_path / "audit.jsonl"
    with serving(
        upstream, tmp_path / "ws", auth_tokens_file=tokens, audit_log=str(audit)
    ) as gateway:
        port = gateway.address.rsplit(":", 1)[1]
        spark = SparkSession.builder.remote(f"sc://localhost:{port}/;token={TOKEN}").create()
        try:
            session_id = spark.session_id
            spark.sql(f"CREATE TEMPORARY TABLE kept AS SELECT '{SECRET_VALUE}' AS p").collect()
            with pytest.raises(PySparkException):
                spark.sql("CREATE TEMPORARY TABLE broken AS SELECT raise_error('boom') AS x").collect()
            with pytest.raises(PySparkException, match="SETTING_PROTECTED"):
                spark.conf.set("spark.sql.sources.commitProtocolClass", SECRET_VALUE)
            spark.sql("DROP TABLE kept").collect()
        finally:
            spark.stop()
        bad = SparkSession.builder.remote(f"sc://localhost:{port}/;token=not-{TOKEN}").create()
        try:
            with pytest.raises(PySparkException):
                bad.range(1).collect()
        finally:
            bad.release_session_on_close = False
            bad.stop()
    assert stat.S_IMODE(audit.stat().st_mode) == 0o600
    text = audit.read_text()
    assert TOKEN not in text
    assert SECRET_VALUE not in text
    lines = _lines(audit)
    assert {tuple(sorted(line)) for line in lines} == {
        ("error_class", "kind", "method", "outcome", "session", "table", "time", "user")
    }
    mine = [line for line in lines if line["session"] == session_id]
    assert all(line["user"] == "alice" for line in mine)
    summary = [(line["method"], line["kind"], line["table"], line["outcome"]) for line in mine]
    assert ("ExecutePlan", "CreateTempTable", "kept", "ok") in summary
    assert ("ExecutePlan", "CreateTempTable", "broken", "failed") in summary
    assert ("Config", "refusal", None, "refused") in summary
    assert ("ExecutePlan", "DropTempTable", "kept", "ok") in summary
    (failed,) = [line for line in mine if line["table"] == "broken"]
    assert failed["error_class"]
    (refused,) = [line for line in mine if line["kind"] == "refusal"]
    assert refused["error_class"] == "CONNECT_PLUGIN.SETTING_PROTECTED"
    strangers = [line for line in lines if line["user"] == "" and line["outcome"] == "refused"]
    assert strangers
    assert all(line["error_class"] == "CONNECT_PLUGIN.UNAUTHENTICATED" for line in strangers)
