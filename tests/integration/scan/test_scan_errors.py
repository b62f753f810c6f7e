"""Scan errors name their class and cause on the first line the stock client shows.

A scan fails inside Spark's Python workers; Spark wraps the worker's
traceback in its own error (``PYTHON_DATA_SOURCE_ERROR``, ``PYTHON_EXCEPTION``)
with the cause on its last line, and pyspark adds the JVM stack it fetches.
Through the gateway the client reads the scan's class and message first,
then one line of context (Spark's own first line, and where the traces
are): the Python and JVM traces stay in the Spark server's log. Planning
errors stay ``AnalysisException``; reading errors, which pyspark would
rebuild as a ``PythonException`` with a fixed first line and no class,
arrive as ``SparkRuntimeException``. Spark's own errors are untouched.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import (
    AnalysisException,
    PySparkException,
    PythonException,
    SparkRuntimeException,
)
from pyspark.errors.exceptions.connect import SparkConnectGrpcException
from pyspark.sql import SparkSession
from pyspark.sql.functions import udf
from pyspark.sql.types import LongType

import connect_plugin
from connect_plugin.server.gateway import Gateway
from connect_plugin.spark_processes.python_daemons import daemons
from tests.integration.support import Upstream, embedded_jvm, new_session

SPARKS_TEXT = ("Spark: [PYTHON_DATA_SOURCE_ERROR] ", "Spark: [PYTHON_EXCEPTION] ")
TRACES = "The Python and JVM traces are in the Spark server's log."


def lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0]


def assert_short(exc: BaseException) -> None:
    """What the client shows is a few lines: no Python traceback, no JVM stack."""
    text = str(exc)
    assert len(text.splitlines()) <= 3, text
    assert "Traceback" not in text
    assert "JVM stacktrace" not in text
    assert "\tat org.apache" not in text


def assert_leads_with(exc: SparkConnectGrpcException, error_class: str, message: str) -> None:
    """The class and message come first, one line of Spark's own text and where the traces
    are after them, and nothing more."""
    assert first_line(exc) == f"[{error_class}] {message}"
    assert exc.getCondition() == error_class
    assert exc.getMessageParameters() == {"message": message}
    assert_short(exc)
    rest = str(exc).splitlines()[1]
    assert rest.startswith(SPARKS_TEXT), str(exc)
    assert rest.endswith(TRACES)


def missing_message(path: Path) -> str:
    return (
        f"path '{path}' does not exist (looked for {path}); check the path, "
        "which is read on the Spark server's file system"
    )


def test_a_missing_path(spark: SparkSession, tmp_path: Path) -> None:
    missing = tmp_path / "nothing"
    df = connect_plugin.scan(spark, str(missing), format="json")
    with pytest.raises(AnalysisException) as caught:
        df.collect()
    assert_leads_with(caught.value, "CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND", missing_message(missing))


def test_a_missing_path_when_only_the_schema_is_asked(
    spark: SparkSession, tmp_path: Path
) -> None:
    missing = tmp_path / "nothing"
    df = connect_plugin.scan(spark, str(missing), format="json")
    with pytest.raises(AnalysisException) as caught:
        df.columns  # noqa: B018
    assert_leads_with(caught.value, "CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND", missing_message(missing))


def test_a_glob_matching_nothing(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("x\n1\n")
    pattern = tmp_path / "*.json"
    with pytest.raises(AnalysisException) as caught:
        connect_plugin.scan(spark, str(pattern), format="json").collect()
    assert_leads_with(
        caught.value,
        "CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND",
        f"glob '{pattern}' matches no file under {tmp_path}; check the pattern "
        "(* and ? stay within one directory level)",
    )
    elsewhere = tmp_path / "gone" / "*.json"
    with pytest.raises(AnalysisException) as caught:
        connect_plugin.scan(spark, str(elsewhere), format="json").collect()
    assert first_line(caught.value) == (
        f"[CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND] glob '{elsewhere}' matches nothing: "
        f"its directory {tmp_path / 'gone'} does not exist"
    )


def test_a_missing_path_in_a_sql_view(spark: SparkSession, tmp_path: Path) -> None:
    missing = tmp_path / "nothing"
    statement = (
        f"CREATE TEMPORARY VIEW missing_view USING scan OPTIONS (path '{missing}', format 'json')"
    )
    with pytest.raises(AnalysisException) as caught:
        spark.sql(statement)
    assert_leads_with(caught.value, "CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND", missing_message(missing))


def test_a_file_that_is_not_its_format(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "junk.parquet"
    path.write_bytes(b"this is not parquet at all")
    with pytest.raises(AnalysisException) as caught:
        connect_plugin.scan(spark, str(path), format="parquet").collect()
    assert first_line(caught.value).startswith(
        f"[CONNECT_PLUGIN.SCAN_UNREADABLE_FILE] cannot read file {path} to learn its columns: "
        "Parquet magic bytes not found"
    )
    assert caught.value.getCondition() == "CONNECT_PLUGIN.SCAN_UNREADABLE_FILE"


def test_a_file_that_breaks_off_past_its_sample(spark: SparkSession, tmp_path: Path) -> None:
    whole = gzip.compress(lines([{"n": i, "pad": "x" * 50} for i in range(20_000)]).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(whole[: len(whole) // 2])
    df = connect_plugin.scan(spark, str(path), format="json")
    assert df.columns == ["n", "pad"]
    with pytest.raises(SparkRuntimeException) as caught:
        df.collect()
    assert_leads_with(
        caught.value,
        "CONNECT_PLUGIN.SCAN_UNREADABLE_FILE",
        f"cannot read file {path}: Truncated compressed stream",
    )


def test_a_bad_record_under_fail(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"a": 1}\n{"a": \n{"a": 3}\n')
    df = connect_plugin.scan(spark, str(tmp_path), format="json", schema="a BIGINT")
    with pytest.raises(SparkRuntimeException) as caught:
        df.collect()
    assert_leads_with(
        caught.value,
        "CONNECT_PLUGIN.SCAN_BAD_RECORD",
        f"file {path}, line 2: malformed json (Expecting value); fix the record, or scan "
        "with on_error='skip' to drop bad records, on_error='null' to null bad values or "
        "on_error='reject' to keep them in a rejects table",
    )
    assert not isinstance(caught.value, PythonException)
    with pytest.raises(SparkRuntimeException) as counted:
        df.count()
    assert str(counted.value).splitlines()[0] == first_line(caught.value)
    assert_short(counted.value)


def test_a_bad_record_read_through_a_sql_view(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"a": 1}\n{"a": "two"}\n')
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW bad_view USING scan "
        f"OPTIONS (path '{path}', format 'json', schema 'a BIGINT')"
    )
    with pytest.raises(SparkRuntimeException) as caught:
        spark.sql("SELECT * FROM bad_view").collect()
    assert first_line(caught.value).startswith(
        f"[CONNECT_PLUGIN.SCAN_BAD_RECORD] file {path}, line 2: "
    )


def test_a_bad_record_in_a_temporary_tables_query(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"a": 1}\n{"a": \n')
    scanned = connect_plugin.scan(spark, str(path), format="json")
    with pytest.raises(SparkRuntimeException) as caught:
        connect_plugin.create_temp_table(scanned, "from_bad_records")
    assert caught.value.getCondition() == "CONNECT_PLUGIN.SCAN_BAD_RECORD"
    assert f"failed: [CONNECT_PLUGIN.SCAN_BAD_RECORD] file {path}, line 2: " in first_line(
        caught.value
    )
    assert_short(caught.value)


def test_a_misspelt_column_under_missing_columns_error(
    spark: SparkSession, tmp_path: Path
) -> None:
    (tmp_path / "a.json").write_text(lines([{"id": 1, "amount": 2.5}]))
    df = connect_plugin.scan(
        spark, str(tmp_path), format="json", columns=["id", "amuont"], missing_columns="error"
    )
    with pytest.raises(AnalysisException) as caught:
        df.collect()
    assert_leads_with(
        caught.value,
        "CONNECT_PLUGIN.SCAN_MISSING_COLUMN",
        "column(s) 'amuont' of the scan's columns are in no file and not in its schema "
        "(the columns are: id, amount); check the spelling, or scan with "
        "missing_columns='null' to read such a column as nulls",
    )


def test_new_columns_under_fail_on_new_columns(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "1.json").write_text(lines([{"id": 1}]))
    (tmp_path / "2.json").write_text(lines([{"id": 2, "added": 2.5}]))
    df = connect_plugin.scan(spark, str(tmp_path), format="json", evolution="fail_on_new_columns")
    with pytest.raises(AnalysisException) as caught:
        df.collect()
    assert first_line(caught.value).startswith("[CONNECT_PLUGIN.SCAN_NEW_COLUMNS] ")
    assert "2.json has new column(s) 'added'" in first_line(caught.value)
    assert caught.value.getCondition() == "CONNECT_PLUGIN.SCAN_NEW_COLUMNS"


def test_new_columns_past_the_sample(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(
        lines([{"id": n} for n in range(30_000)] + [{"id": 0, "late": True}])
    )
    df = connect_plugin.scan(spark, str(tmp_path), format="json", evolution="fail_on_new_columns")
    assert df.columns == ["id"]
    with pytest.raises(SparkRuntimeException) as caught:
        df.collect()
    assert first_line(caught.value).startswith("[CONNECT_PLUGIN.SCAN_NEW_COLUMNS] ")
    assert "has new column(s) 'late'" in first_line(caught.value)


def test_an_error_that_arrives_on_a_reattached_stream(
    gateway: Gateway, upstream: Upstream, tmp_path: Path
) -> None:
    """The first scan's rows fill more than one stream; the second, ten times longer, fails.

    A union keeps the scans' partitions in order, so the first one's rows are
    sent before the second fails, on any number of cores.
    """
    if not upstream.embedded:
        pytest.skip("needs the upstream started with a small senderMaxStreamSize")
    (tmp_path / "a.json").write_text(lines([{"n": i, "pad": "x" * 100} for i in range(20_000)]))
    slow = lines([{"n": i, "pad": "y" * 100} for i in range(200_000)])
    (tmp_path / "b.json").write_text(slow + '{"n": \n')
    spark = new_session(gateway.address)
    try:
        df = connect_plugin.scan(spark, str(tmp_path / "a.json"), format="json").union(
            connect_plugin.scan(spark, str(tmp_path / "b.json"), format="json")
        )
        before = gateway.calls("ReattachExecute")
        with pytest.raises(SparkRuntimeException) as caught:
            df.toArrow()
        assert gateway.calls("ReattachExecute") > before
    finally:
        spark.stop()
    assert first_line(caught.value).startswith(
        f"[CONNECT_PLUGIN.SCAN_BAD_RECORD] file {tmp_path / 'b.json'}, line 200001: "
    )


def failing_udf_error(session: SparkSession) -> PythonException:
    def mimic(value):  # type: ignore[no-untyped-def]
        raise ValueError("[CONNECT_PLUGIN.SCAN_BAD_RECORD] a user's text that looks like ours")

    with pytest.raises(PythonException) as caught:
        session.range(1).select(udf(mimic, LongType(), useArrow=False)("id")).collect()
    return caught.value


def test_sparks_own_errors_reach_the_client_unchanged(
    spark: SparkSession, direct: SparkSession
) -> None:
    through_gateway = failing_udf_error(spark)
    straight = failing_udf_error(direct)
    assert type(through_gateway) is type(straight)
    assert str(through_gateway) == str(straight)
    assert through_gateway.getCondition() is None
    query = "SELECT * FROM no_such_table_anywhere"
    with pytest.raises(AnalysisException) as via_gateway:
        spark.sql(query).collect()
    with pytest.raises(AnalysisException) as via_direct:
        direct.sql(query).collect()
    assert str(via_gateway.value) == str(via_direct.value)
    assert via_gateway.value.getCondition() == via_direct.value.getCondition()
    assert via_gateway.value.getMessageParameters() == via_direct.value.getMessageParameters()


def test_a_schema_conflict(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(lines([{"id": 1}]))
    (tmp_path / "b.json").write_text(lines([{"id": "x"}]))
    with pytest.raises(AnalysisException) as caught:
        connect_plugin.scan(spark, str(tmp_path), format="json").collect()
    assert first_line(caught.value).startswith(
        f"[CONNECT_PLUGIN.SCAN_SCHEMA_CONFLICT] column 'id' is int64 in file {tmp_path / 'a.json'} "
        f"but string in file {tmp_path / 'b.json'}"
    )
    assert_short(caught.value)


def test_a_file_broken_after_planning(spark: SparkSession, tmp_path: Path) -> None:
    """A file deleted after planning is no longer read (test_scan_edges.py); one that
    breaks is an unreadable file, named on the first line."""
    (tmp_path / "a.json").write_text(lines([{"id": 1}]))
    (tmp_path / "b.json.gz").write_bytes(gzip.compress(lines([{"id": 2}]).encode()))
    df = connect_plugin.scan(spark, str(tmp_path), format="json")
    assert sorted(row["id"] for row in df.collect()) == [1, 2]
    (tmp_path / "b.json.gz").write_bytes(b"not gzip at all")
    with pytest.raises(SparkRuntimeException) as caught:
        df.collect()
    assert first_line(caught.value).startswith(
        f"[CONNECT_PLUGIN.SCAN_UNREADABLE_FILE] cannot read file {tmp_path / 'b.json.gz'}: "
    )
    assert_short(caught.value)


def test_a_file_pyarrow_refuses_fails_with_a_scan_class_naming_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A csv with a byte order mark: read as ``id``, or an error of the scan naming the
    file, never pyarrow's own exception without a class (it was ``ArrowKeyError``)."""
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbfid,v\n1,2\n")
    df = connect_plugin.scan(spark, str(path), format="csv", options={"header": "true"})
    failed: PySparkException | None = None
    rows: list[dict[str, Any]] = []
    try:
        rows = [row.asDict() for row in df.collect()]
    except PySparkException as exc:
        failed = exc
    if failed is None:
        assert rows in ([{"id": 1, "v": 2}], [{"id": "1", "v": "2"}])
        return
    assert isinstance(failed, SparkConnectGrpcException)
    assert re.match(r"CONNECT_PLUGIN\.SCAN(_[A-Z]+)*$", failed.getCondition() or "")
    assert f"file {path}" in first_line(failed)
    assert_short(failed)


def _read_workers(jvm: int, server_side_session: str) -> list[int]:
    """The processes reading a scan for a session: the workers of its ``pyspark.worker``
    daemon under Spark's JVM ``jvm``."""
    parents = {
        d.forked or d.pid
        for d in daemons(under=jvm)
        if d.session == server_side_session
        and Path(f"/proc/{d.pid}/cmdline").read_bytes().split(b"\0")[-2:] == [b"pyspark.worker", b""]
    }
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        parent = re.search(r"^PPid:\s+(\d+)$", text, re.MULTILINE)
        if parent is not None and int(parent.group(1)) in parents:
            found.append(int(status.parent.name))
    return found


def test_a_python_worker_lost_under_a_scan(
    gateway: Gateway, upstream: Upstream, tmp_path: Path
) -> None:
    """A worker killed while it reads: the scan's class and two lines, not Spark's
    classless SparkException with its JVM stack (issue 44)."""
    if not upstream.embedded:
        pytest.skip("kills a Python worker of the embedded server")
    (tmp_path / "a.json").write_text(lines([{"n": i, "pad": "x" * 40} for i in range(200_000)]))
    spark = new_session(gateway.address)
    try:
        df = connect_plugin.scan(spark, str(tmp_path), format="json", max_rows=8)
        assert df.columns == ["n", "pad"]
        server_side = spark.client._server_session_id
        jvm = embedded_jvm(upstream)
        caught: list[PySparkException] = []

        def read() -> None:
            try:
                df.selectExpr("sum(length(pad))").collect()
            except PySparkException as exc:
                caught.append(exc)

        reading = threading.Thread(target=read)
        reading.start()
        killed: list[int] = []
        deadline = time.monotonic() + 120
        while not killed and reading.is_alive() and time.monotonic() < deadline:
            for pid in _read_workers(jvm, server_side):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.05)
        reading.join()
    finally:
        spark.stop()
    assert killed, "the scan ended before a worker could be killed"
    (exc,) = caught
    assert isinstance(exc, SparkConnectGrpcException)
    assert exc.getCondition() == "CONNECT_PLUGIN.SCAN_WORKER_LOST"
    assert first_line(exc).startswith(
        "[CONNECT_PLUGIN.SCAN_WORKER_LOST] a Spark Python worker exited unexpectedly while the "
        "query ran (it was killed, ran out of memory or crashed)"
    )
    assert_short(exc)
