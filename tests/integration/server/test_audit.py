"""The audit log of a scripted session, line by line, and what it never holds.

One JSON line per statement the gateway handles (its kind, table, outcome,
error class) and per refusal, with the token's user: never the token, never
SQL text or the values in it. A statement that ends after its client's
stream did, with no stream reattached to take its answer, has its line too.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import time
import uuid
from pathlib import Path
from typing import Any

import grpc
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql.connect.proto import base_pb2_grpc

import connect_plugin
from connect_plugin.server.gateway import Gateway
from tests.integration.support import (
    Upstream,
    reattach_of,
    reattachable,
    release_all_of,
    serving,
    temp_table_names,
)

TOKEN = "alice-" + secrets.token_urlsafe(24)
SECRET_VALUE = "hunter2-" + secrets.token_urlsafe(12)


UNCLAIMED_WAIT_S = 30.0


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _create_past_the_deadline(gateway: Gateway, spark: SparkSession, table: str) -> None:
    """A reattachable CTTAS whose stream ends at its deadline, before the CTTAS does, and
    that no client reattaches to: released once the table is there."""
    request = reattachable(
        spark.session_id,
        spark.client._user_id or "",  # type: ignore[attr-defined]
        f"CREATE TEMPORARY TABLE {table} AS "
        "SELECT 1 AS a, reflect('java.lang.Thread', 'sleep', CAST(1000 AS BIGINT)) AS slept",
    )
    assert gateway.detached is not None
    with grpc.insecure_channel(gateway.address.removeprefix("sc://")) as channel:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)
        with pytest.raises(grpc.RpcError) as ended:
            for _ in stub.ExecutePlan(
                request, timeout=0.5, metadata=[("authorization", f"Bearer {TOKEN}")]
            ):
                pass
        assert ended.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
        assert len(gateway.detached) == 1, "the CTTAS ended within the stream's deadline"
        deadline = time.monotonic() + UNCLAIMED_WAIT_S
        while table not in temp_table_names(spark):
            assert time.monotonic() < deadline, f"the CTTAS of [{table}] did not end"
            time.sleep(0.1)
        stub.ReleaseExecute(release_all_of(request), metadata=[("authorization", f"Bearer {TOKEN}")])
    assert len(gateway.detached) == 0


def test_a_scripted_session_audited_field_by_field(upstream: Upstream, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {TOKEN}\n")
    os.chmod(tokens, 0o600)
    audit = tmp_path / "audit.jsonl"
    with serving(
        upstream,
        tmp_path / "ws",
        auth_tokens_file=tokens,
        audit_log=str(audit),
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
            _create_past_the_deadline(gateway, spark, "unclaimed")
            assert spark.table("unclaimed").count() == 1
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
        ("error_class", "kind", "method", "operation", "outcome", "session", "table", "time", "user")
    }
    mine = [line for line in lines if line["session"] == session_id]
    assert all(line["user"] == "alice" for line in mine)
    summary = [(line["method"], line["kind"], line["table"], line["outcome"]) for line in mine]
    assert ("ExecutePlan", "CreateTempTable", "kept", "ok") in summary
    assert ("ExecutePlan", "CreateTempTable", "broken", "failed") in summary
    assert ("Config", "refusal", None, "refused") in summary
    assert ("ExecutePlan", "DropTempTable", "kept", "ok") in summary
    assert ("ExecutePlan", "CreateTempTable", "unclaimed", "ok") in summary
    (failed,) = [line for line in mine if line["table"] == "broken"]
    assert failed["error_class"]
    (refused,) = [line for line in mine if line["kind"] == "refusal"]
    assert refused["error_class"] == "CONNECT_PLUGIN.SETTING_PROTECTED"
    assert refused["operation"] is None, "a Config call names no operation"
    operations = [line["operation"] for line in mine if line["method"] == "ExecutePlan"]
    assert all(operations)
    assert len(set(operations)) == len(operations), "each statement its own operation"
    strangers = [line for line in lines if line["user"] == "" and line["outcome"] == "refused"]
    assert strangers
    assert all(line["error_class"] == "CONNECT_PLUGIN.UNAUTHENTICATED" for line in strangers)


def test_a_statement_two_streams_follow_to_its_end_has_one_line(
    upstream: Upstream, tmp_path: Path
) -> None:
    """A client reattaches while its first stream of a CTTAS is still open (as one whose
    deadline passed a moment before): both streams get the answer, the audit one line."""
    audit = tmp_path / "audit.jsonl"
    with serving(upstream, tmp_path / "ws", audit_log=str(audit)) as gateway:
        request = reattachable(
            str(uuid.uuid4()),
            "twice",
            "CREATE TEMPORARY TABLE followed AS "
            "SELECT 1 AS a, reflect('java.lang.Thread', 'sleep', CAST(3000 AS BIGINT)) AS slept",
        )
        with grpc.insecure_channel(gateway.address.removeprefix("sc://")) as channel:
            stub = base_pb2_grpc.SparkConnectServiceStub(channel)
            first = stub.ExecutePlan(request)
            time.sleep(1.0)
            second = stub.ReattachExecute(reattach_of(request))
            answers = [[r.WhichOneof("response_type") for r in s] for s in (first, second)]
    assert [kinds[-2:] for kinds in answers] == [["sql_command_result", "result_complete"]] * 2
    mine = [line for line in _lines(audit) if line["session"] == request.session_id]
    assert [(line["kind"], line["outcome"], line["operation"]) for line in mine] == [
        ("CreateTempTable", "ok", request.operation_id)
    ]


def test_a_failed_scan_is_audited_with_the_class_the_client_was_told(
    upstream: Upstream, tmp_path: Path
) -> None:
    """Not Spark's PYTHON_EXCEPTION, which the gateway turns into the scan's class (issue 45)."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "bad.json").write_text('{"id": 1}\n{"id": \n')
    audit = tmp_path / "audit.jsonl"
    told: list[str | None] = []
    with serving(upstream, tmp_path / "ws", audit_log=str(audit)) as gateway:
        spark = SparkSession.builder.remote(gateway.address).create()
        try:
            session_id = spark.session_id
            scanned = connect_plugin.scan(spark, str(data), format="json", schema="id BIGINT")
            for action in (scanned.collect, scanned.count):
                with pytest.raises(PySparkException) as caught:
                    action()
                told.append(caught.value.getCondition())
            with pytest.raises(PySparkException) as caught:
                connect_plugin.create_temp_table(scanned, "from_bad")
            told.append(caught.value.getCondition())
        finally:
            spark.stop()
    assert told == ["CONNECT_PLUGIN.SCAN_BAD_RECORD"] * 3
    failed = [
        line
        for line in _lines(audit)
        if line["session"] == session_id and line["outcome"] == "failed"
    ]
    assert sorted((line["kind"], line["error_class"]) for line in failed) == [
        ("CreateTempTable", "CONNECT_PLUGIN.SCAN_BAD_RECORD"),
        *[("ScanFiles", "CONNECT_PLUGIN.SCAN_BAD_RECORD")] * 3,
    ]
