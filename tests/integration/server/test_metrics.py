"""Prometheus metrics scraped over HTTP during real traffic through the gateway.

Values are asserted, not only names: calls by method and status code, their
durations, bytes each way, streams in flight, refusals by kind, statements by
kind and outcome, Spark's errors by class, what the session registry holds and
what expiry and recovery did, refusals by quota, the bytes of temp tables, the
rows scans read by bad-record policy; and no label names a user, a session or a
table.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

import connect_plugin
from connect_plugin.server.gateway import Gateway
from tests.integration.support import (
    SENDER_MAX_STREAM_SIZE,
    Upstream,
    new_session,
    serving,
    table_folders,
)

BYTES_QUOTA = 200_000
"""Far above a one-row table, far below the ~1 MB of a table of 20000 hashes."""

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture
def measured(upstream: Upstream, tmp_path: Path) -> Iterator[Gateway]:
    with serving(upstream, tmp_path / "ws", metrics_port=0) as gateway:
        yield gateway


def _scrape(gateway: Gateway) -> tuple[str, Samples]:
    assert gateway.metrics is not None
    with urllib.request.urlopen(f"http://127.0.0.1:{gateway.metrics.port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return text, samples


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_count_real_traffic_and_name_no_one(measured: Gateway) -> None:
    _, before = _scrape(measured)
    spark: SparkSession = new_session(measured.address)
    try:
        assert spark.range(3).count() == 3
        spark.sql("CREATE TEMPORARY TABLE metered AS SELECT id FROM range(5)").collect()
        with pytest.raises(PySparkException, match="TEMP_TABLE_EXISTS"):
            spark.sql("CREATE TEMPORARY TABLE metered AS SELECT 1 AS id").collect()
        spark.sql("UPDATE metered SET id = id + 1 WHERE id > 2").collect()
        with pytest.raises(PySparkException, match="UNRESOLVED_COLUMN"):
            spark.sql("SELECT no_such_column FROM range(1)").collect()
        with pytest.raises(PySparkException, match="SETTING_PROTECTED"):
            spark.conf.set("spark.sql.sources.commitProtocolClass", "x")
        session_id, user_id = spark.session_id, spark.client._user_id or ""
        text, after = _scrape(measured)
    finally:
        spark.stop()

    def grew(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    executed = grew("connect_plugin_rpcs_total", method="ExecutePlan", code="OK")
    assert executed >= 2
    assert grew("connect_plugin_rpc_duration_seconds_count", method="ExecutePlan") >= executed
    assert grew("connect_plugin_rpcs_total", method="Config", code="PERMISSION_DENIED") == 1
    assert grew("connect_plugin_upstream_calls_total", method="Config") == grew(
        "connect_plugin_rpcs_total", method="Config", code="OK"
    )
    assert grew("connect_plugin_upstream_calls_total", method="ExecutePlan") >= 1
    assert grew("connect_plugin_refusals_total", reason="SettingProtected") == 1
    assert grew("connect_plugin_forwarded_bytes_total", direction="to_upstream") > 0
    assert grew("connect_plugin_forwarded_bytes_total", direction="to_client") > 0
    assert _value(after, "connect_plugin_active_streams") == 0
    assert _value(after, "connect_plugin_temp_tables") == 1
    assert _value(after, "connect_plugin_temp_table_rows") == 5
    assert _value(after, "connect_plugin_sessions") >= 1
    assert grew("connect_plugin_statements_total", kind="CreateTempTable", outcome="ok") == 1
    assert grew("connect_plugin_statements_total", kind="CreateTempTable", outcome="refused") == 1
    assert grew("connect_plugin_statements_total", kind="UpdateTable", outcome="ok") == 1
    unresolved = [
        value - _value(before, name, **dict(labels))
        for (name, labels), value in after.items()
        if name == "connect_plugin_upstream_errors_total"
        and dict(labels)["error_class"].startswith("UNRESOLVED_COLUMN")
    ]
    assert sum(unresolved) >= 1, unresolved
    for reason in ("expired", "gone_upstream"):
        assert ("connect_plugin_sessions_ended_total", (("reason", reason),)) in after
    for action in ("table_rolled_back", "drop_finished", "session_gone", "folder_swept"):
        assert _value(after, "connect_plugin_recovery_actions_total", action=action) == 0
        assert ("connect_plugin_recovery_actions_total", (("action", action),)) in after
    for private in (session_id, "metered", *([user_id] if user_id else [])):
        assert private not in text
    _, released = _scrape(measured)
    assert _value(released, "connect_plugin_temp_tables") == 0


def test_quota_refusals_are_counted_once_by_quota(upstream: Upstream, tmp_path: Path) -> None:
    with serving(
        upstream, tmp_path / "ws", metrics_port=0, quota_sessions_per_user=2,
        quota_tables_per_session=2, quota_bytes_per_session=BYTES_QUOTA,
    ) as gateway:  # fmt: skip
        first, second, third = (new_session(gateway.address) for _ in range(3))
        try:
            for name in ("a", "b", "c"):
                create = f"CREATE TEMPORARY TABLE {name} AS SELECT 1 AS x"
                if name == "c":
                    with pytest.raises(PySparkException, match="quota_tables_per_session"):
                        first.sql(create).collect()
                else:
                    first.sql(create).collect()
            with pytest.raises(PySparkException, match="quota_bytes_per_session"):
                second.sql(
                    "CREATE TEMPORARY TABLE big AS "
                    "SELECT sha2(CAST(id AS STRING), 256) AS h FROM range(20000)"
                ).collect()
            second.sql("CREATE TEMPORARY TABLE small AS SELECT 1 AS x").collect()
            with pytest.raises(PySparkException, match="quota_sessions_per_user"):
                third.sql("CREATE TEMPORARY TABLE d AS SELECT 1 AS x").collect()
            _, samples = _scrape(gateway)
        finally:
            for spark in (first, second, third):
                spark.stop()
    for quota in ("sessions_per_user", "tables_per_session", "bytes_per_session"):
        assert _value(samples, "connect_plugin_quota_refusals_total", quota=quota) == 1, quota
    assert _value(samples, "connect_plugin_refusals_total", reason="QuotaExceeded") == 3
    assert _value(samples, "connect_plugin_statements_total", kind="CreateTempTable", outcome="refused") == 3
    assert _value(samples, "connect_plugin_statements_total", kind="CreateTempTable", outcome="failed") == 0


def _data_bytes(folders: list[Path]) -> int:
    """Bytes of the files below ``folders``, Spark's hidden ones (``.crc``, ``_SUCCESS``) left out."""
    return sum(
        path.stat().st_size
        for folder in folders
        for path in folder.rglob("*")
        if path.is_file() and not path.name.startswith((".", "_"))
    )


def test_temp_table_bytes_are_those_of_their_files(measured: Gateway) -> None:
    spark = new_session(measured.address)
    try:
        spark.sql("CREATE TEMPORARY TABLE small AS SELECT id FROM range(10)").collect()
        spark.sql(
            "CREATE TEMPORARY TABLE wide PARTITIONED BY (k) AS "
            "SELECT id % 3 AS k, sha2(CAST(id AS STRING), 256) AS h FROM range(3000)"
        ).collect()
        spark.sql("INSERT INTO small SELECT id FROM range(10, 500)").collect()
        folders = table_folders(measured.config.workspace, spark)
        _, both = _scrape(measured)
        on_disk = _data_bytes(folders)
        spark.sql("DROP TABLE small").collect()
        (remaining,) = table_folders(measured.config.workspace, spark)
        _, one = _scrape(measured)
        remaining_on_disk = _data_bytes([remaining])
    finally:
        spark.stop()
    assert len(folders) == 2
    assert on_disk > remaining_on_disk > 0
    assert _value(both, "connect_plugin_temp_table_bytes") == on_disk
    assert _value(one, "connect_plugin_temp_table_bytes") == remaining_on_disk


def _bad_json(root: Path, files: int, good: int, width: int = 1) -> Path:
    """``files`` json-lines files of ``good`` rows ``{"a": n, "s": ...}`` and one bad line each."""
    root.mkdir()
    for index in range(files):
        lines = [json.dumps({"a": n, "s": "x" * width}) for n in range(good)]
        lines.insert(good // 2, '{"a": ')
        (root / f"{index}.json").write_text("\n".join(lines) + "\n")
    return root


def test_scan_rows_are_counted_by_policy_as_spark_reports_them(
    measured: Gateway, tmp_path: Path
) -> None:
    files = _bad_json(tmp_path / "small", files=3, good=10)
    wide_rows = 3 * SENDER_MAX_STREAM_SIZE // 1000
    wide = _bad_json(tmp_path / "wide", files=1, good=wide_rows, width=1000)
    _, before = _scrape(measured)
    spark = new_session(measured.address)
    try:

        def scan(root: Path, policy: str) -> DataFrame:
            return connect_plugin.scan(
                spark, str(root), format="json", schema="a BIGINT, s STRING", on_error=policy
            )

        skipped = scan(files, "skip")
        assert len(skipped.collect()) == 30
        assert skipped.executionInfo is not None
        assert skipped.executionInfo.metrics is not None
        assert "numOutputRows: 30 (sum)" in skipped.executionInfo.metrics.toText()
        assert len(scan(files, "null").collect()) == 33
        assert len(scan(files, "skip").union(scan(files, "null")).collect()) == 63
        assert len(scan(wide, "skip").collect()) == wide_rows
        spark.range(5).collect()
        _, after = _scrape(measured)
    finally:
        spark.stop()

    def grew(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    assert grew("connect_plugin_scan_rows_total", policy="skip") == 30 + wide_rows
    assert grew("connect_plugin_scan_rows_total", policy="null") == 33
    assert grew("connect_plugin_scan_rows_total", policy="mixed") == 63
    assert grew("connect_plugin_rpcs_total", method="ReattachExecute", code="OK") >= 1


def test_bad_records_are_counted_where_the_gateway_sees_them(
    measured: Gateway, tmp_path: Path
) -> None:
    files = _bad_json(tmp_path / "bad", files=3, good=10)
    _, before = _scrape(measured)
    spark = new_session(measured.address)
    try:

        def scan(policy: str, **options: str) -> DataFrame:
            return connect_plugin.scan(
                spark,
                str(files),
                format="json",
                schema="a BIGINT, s STRING",
                on_error=policy,
                **options,
            )

        rejecting = scan("reject", rejects_table="bad_rows")
        assert len(rejecting.collect()) == 30
        assert len(rejecting.filter("a > 4").collect()) == 15
        assert spark.table("bad_rows").count() == 3
        with pytest.raises(PySparkException, match="SCAN_BAD_RECORD"):
            scan("fail").collect()
        assert len(scan("skip").collect()) == 30
        _, after = _scrape(measured)
    finally:
        spark.stop()

    def grew(policy: str) -> float:
        name = "connect_plugin_scan_bad_records_total"
        return _value(after, name, policy=policy) - _value(before, name, policy=policy)

    assert grew("reject") == 3 + 3
    assert grew("fail") == 1
    assert grew("skip") == 0
