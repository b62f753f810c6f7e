"""Stock pyspark behaviours, each a function of a fresh session, and what Spark does.

A case returns a plain value (compared as it is) or raises; the outcome of
an exception is its pyspark class, condition and SQL state, which is what
users' code branches on. ``expected`` is Spark's own behaviour, checked
directly against the server in the same run as through the gateway.
"""

from __future__ import annotations

import datetime
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from pyspark.errors import PySparkException
from pyspark.sql import Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.connect.session import SparkSession as ConnectSession
from pyspark.sql.types import LongType

from tests.integration.support import SENDER_MAX_STREAM_SIZE, new_session

INTERRUPT_WAIT_S = 60.0
LARGE_ROWS = 200_000
LARGE_TEXT = 24
LARGE_SCHEMA = "id: int64 not null\ns: string"
PROGRESS_ROWS = 50_000_000
ARROW_ROW = {
    "d": Decimal("1234567890123456789012345678.0123456789"),
    "ntz": datetime.datetime(2024, 2, 29, 12, 34, 56, 123456),
    "s": {"a": 1, "b": [1, 2, None]},
    "m": {"k": [{"x": 1.5}]},
    "aa": [["p"], None],
    "bin": b"\x00\xff",
    "day": datetime.date(2024, 1, 1),
}
ARROW_TYPES = [
    ("d", "decimal128(38, 10)"),
    ("ntz", "timestamp[us]"),
    ("s", "struct<a: int32 not null, b: list<element: int32> not null>"),
    ("m", "map<string, list<element: struct<x: double not null> not null>>"),
    ("aa", "list<element: list<element: string not null>>"),
    ("bin", "binary"),
    ("day", "date32[day]"),
]
SPARK_TYPES = (
    "struct<d:decimal(38,10),ntz:timestamp_ntz,s:struct<a:int,b:array<int>>,"
    "m:map<string,array<struct<x:double>>>,aa:array<array<string>>,bin:binary,day:date>"
)


@dataclass(frozen=True)
class Outcome:
    """What a user's code sees: a value, or an exception's class, condition and SQL state."""

    value: Any = None
    exception: str | None = None
    condition: str | None = None
    sql_state: str | None = None


def raised(exception: str, condition: str | None, sql_state: str | None) -> Outcome:
    return Outcome(exception=exception, condition=condition, sql_state=sql_state)


def outcome_of(run: Callable[[SparkSession], Any], address: str) -> Outcome:
    """``run`` on a new session at ``address``, which is stopped whatever happens."""
    spark = new_session(address)
    try:
        return Outcome(value=run(spark))
    except PySparkException as exc:
        return raised(type(exc).__name__, exc.getCondition(), exc.getSqlState())
    except grpc.RpcError as exc:
        return _grpc_outcome(exc)
    finally:
        spark.stop()


def _grpc_outcome(exc: grpc.RpcError) -> Outcome:
    """A gRPC error pyspark let through unconverted (``cloneSession`` does): its ErrorInfo."""
    status = rpc_status.from_call(exc)  # type: ignore[arg-type]
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            metadata = info.metadata
            return raised("grpc.RpcError", metadata.get("errorClass"), metadata.get("sqlState"))
    return raised("grpc.RpcError", None, None)


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[SparkSession], Any]
    expected: Outcome


def _session(spark: SparkSession) -> Any:
    spark.sql("CREATE TEMPORARY VIEW mine AS SELECT 1 AS x")
    other = spark.newSession()
    try:
        distinct = other.client._session_id != spark.client._session_id
        views = [t.name for t in other.catalog.listTables() if t.isTemporary]
        return (spark.range(5).count(), spark.table("mine").first()[0], distinct, views)
    finally:
        other.stop()


def _config(spark: SparkSession) -> Any:
    key = "spark.sql.shuffle.partitions"
    spark.conf.set(key, "7")
    set_value = spark.conf.get(key)
    spark.conf.unset(key)
    return (
        set_value,
        spark.conf.get(key) == "7",
        spark.conf.get("spark.sql.transparency.unknown", "fallback"),
        spark.conf.isModifiable("spark.sql.ansi.enabled"),
    )


def _config_missing(spark: SparkSession) -> Any:
    return spark.conf.get("spark.sql.transparency.unknown")


def _clone(spark: SparkSession) -> Any:
    spark.sql("CREATE TEMPORARY VIEW shared AS SELECT 42 AS x")
    spark.conf.set("spark.sql.shuffle.partitions", "3")
    wanted = str(uuid.uuid4())
    clone = spark.cloneSession(wanted)
    try:
        copied = (clone.table("shared").first()[0], clone.conf.get("spark.sql.shuffle.partitions"))
        clone.sql("DROP VIEW shared")
        return (clone.client._session_id == wanted, copied, spark.table("shared").count())
    finally:
        clone.stop()


def _clone_invalid(spark: SparkSession) -> Any:
    spark.range(1).count()
    spark.cloneSession("not-a-valid-uuid").stop()


def _interrupt(spark: SparkSession) -> Any:
    failure: list[Outcome] = []

    def long_query() -> None:
        try:
            spark.range(0, 10**13, 1, 1).selectExpr("max(id)").collect()
        except PySparkException as exc:
            failure.append(raised(type(exc).__name__, exc.getCondition(), exc.getSqlState()))

    runner = threading.Thread(target=long_query)
    runner.start()
    deadline = time.monotonic() + INTERRUPT_WAIT_S
    interrupted: list[str] = []
    while not interrupted and time.monotonic() < deadline and runner.is_alive():
        time.sleep(0.2)
        interrupted = spark.interruptAll()
    runner.join(INTERRUPT_WAIT_S)
    return (len(interrupted), runner.is_alive(), failure)


def _large_result(spark: SparkSession) -> Any:
    """Several MB in Arrow batches: more than one stream of ``SENDER_MAX_STREAM_SIZE``
    (the test server's setting), so the client reattaches to read it all."""
    df = spark.range(LARGE_ROWS).selectExpr("id", f"repeat(CAST(id % 10 AS STRING), {LARGE_TEXT}) AS s")
    table = df.toArrow()
    assert table.nbytes > 2 * SENDER_MAX_STREAM_SIZE
    rows = df.collect()
    return (table.num_rows, sum(r.id for r in rows), rows[-1].s, table.schema.to_string())


def _artifact(spark: SparkSession) -> Any:
    module = f"transparency_{uuid.uuid4().hex[:12]}"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{module}.py"
        path.write_text("def twice(x):\n    return 2 * x\n")
        spark.addArtifacts(str(path), pyfile=True)

    # pyspark makes a Python UDF with the process's active session, and the case's session
    # is a fresh one (builder.create() never makes it active): it is made active meanwhile.
    active = ConnectSession._active_session
    previous = getattr(active, "session", None)
    active.session = spark
    try:
        twice = F.udf(lambda x: __import__(module).twice(x), LongType())
        return [row[0] for row in spark.range(1, 4).select(twice("id")).collect()]
    finally:
        active.session = previous


def _parse_error(spark: SparkSession) -> Any:
    return spark.sql("SELEC 1").collect()


def _analysis_error(spark: SparkSession) -> Any:
    return spark.sql("SELECT * FROM transparency_no_such_table").collect()


def _runtime_error(spark: SparkSession) -> Any:
    spark.conf.set("spark.sql.ansi.enabled", "true")
    return spark.sql("SELECT 1 / 0").collect()


def _cttas_head_syntax(spark: SparkSession) -> Any:
    return spark.sql("CREATE TEMPORARY TABLE broken (a INT AS SELECT 1").collect()


class _Progress:
    def __init__(self) -> None:
        self.calls: list[tuple[int, bool]] = []

    def __call__(self, stages: Any, inflight_tasks: int, operation_id: Any, done: bool) -> None:
        self.calls.append((len(list(stages or ())), done))


def _progress(spark: SparkSession) -> Any:
    handler = _Progress()
    spark.registerProgressHandler(handler)
    try:
        total = spark.range(0, PROGRESS_ROWS, 1, 4).selectExpr("sum(id)").first()[0]
    finally:
        spark.clearProgressHandlers()
    return (total, bool(handler.calls), handler.calls[-1][1] if handler.calls else None)


def _observed(spark: SparkSession) -> Any:
    observation = Observation("transparency")
    df = spark.range(100).observe(
        observation, F.count(F.lit(1)).alias("rows"), F.max("id").alias("top")
    )
    return (df.count(), observation.get)


def _arrow_types(spark: SparkSession) -> Any:
    df = spark.sql(
        "SELECT CAST('1234567890123456789012345678.0123456789' AS DECIMAL(38, 10)) AS d, "
        "TIMESTAMP_NTZ'2024-02-29 12:34:56.123456' AS ntz, "
        "named_struct('a', 1, 'b', array(1, 2, NULL)) AS s, "
        "map('k', array(named_struct('x', 1.5D))) AS m, "
        "array(array('p'), NULL) AS aa, X'00FF' AS bin, DATE'2024-01-01' AS day"
    )
    row = df.first()
    assert row is not None
    arrow = [(field.name, str(field.type)) for field in df.toArrow().schema]
    return (row.asDict(recursive=True), arrow, df.schema.simpleString())


CASES = [
    Case("session", _session, Outcome((5, 1, True, []))),
    Case("config", _config, Outcome(("7", False, "fallback", True))),
    Case(
        "config_missing",
        _config_missing,
        raised("SparkNoSuchElementException", "SQL_CONF_NOT_FOUND", "42K0I"),
    ),
    Case("clone", _clone, Outcome((True, (42, "3"), 1))),
    Case(
        "clone_invalid_id",
        _clone_invalid,
        raised(
            "grpc.RpcError", "INVALID_CLONE_SESSION_REQUEST.TARGET_SESSION_ID_FORMAT", "42K04"
        ),
    ),
    Case(
        "interrupt",
        _interrupt,
        Outcome((1, False, [raised("UnknownException", "OPERATION_CANCELED", "HY008")])),
    ),
    Case(
        "large_result",
        _large_result,
        Outcome((LARGE_ROWS, LARGE_ROWS * (LARGE_ROWS - 1) // 2, "9" * LARGE_TEXT, LARGE_SCHEMA)),
    ),
    Case("artifact_pyfile", _artifact, Outcome([2, 4, 6])),
    Case("parse_error", _parse_error, raised("ParseException", "PARSE_SYNTAX_ERROR", "42601")),
    Case(
        "analysis_error",
        _analysis_error,
        raised("AnalysisException", "TABLE_OR_VIEW_NOT_FOUND", "42P01"),
    ),
    Case(
        "runtime_error_ansi",
        _runtime_error,
        raised("ArithmeticException", "DIVIDE_BY_ZERO", "22012"),
    ),
    Case(
        "cttas_head_syntax_error",
        _cttas_head_syntax,
        raised("ParseException", "PARSE_SYNTAX_ERROR", "42601"),
    ),
    Case("progress", _progress, Outcome((PROGRESS_ROWS * (PROGRESS_ROWS - 1) // 2, True, True))),
    Case("observed_metrics", _observed, Outcome((100, {"rows": 100, "top": 99}))),
    Case("arrow_types", _arrow_types, Outcome((ARROW_ROW, ARROW_TYPES, SPARK_TYPES))),
]
