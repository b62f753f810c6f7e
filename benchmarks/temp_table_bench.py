"""What a temporary table costs: CTTAS vs writing the files and the view by hand.

Both paths run through the same gateway, in front of the same embedded Spark
Connect server, interleaved: CTTAS of ``ROWS`` rows against
``df.write.parquet(path)`` plus ``createOrReplaceTempView`` over
``spark.read.parquet(path)``. Then a session holding ``RELEASE_TABLES``
temp tables is released and the time ``spark.stop()`` takes is reported.
Targets (issue 3): CTTAS / by hand <= 1.05; release of 200 tables < 1 s.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from pathlib import Path

from pyspark.sql.connect.session import SparkSession

from connect_plugin.config import Config
from connect_plugin.server.stack import Stack

ROWS = 5_000_000
RUNS = 5
RELEASE_TABLES = 200
RATIO_TARGET = 1.05
RELEASE_TARGET_S = 1.0


def _frame(spark: SparkSession) -> object:
    return spark.range(ROWS).selectExpr("id", "id % 100 AS k", "CAST(id AS STRING) AS s")


def _cttas(spark: SparkSession, name: str) -> float:
    started = time.perf_counter()
    spark.sql(
        f"CREATE TEMPORARY TABLE {name} AS "
        f"SELECT id, id % 100 AS k, CAST(id AS STRING) AS s FROM range({ROWS})"
    ).collect()
    return time.perf_counter() - started


def _by_hand(spark: SparkSession, root: Path, name: str) -> float:
    path = str(root / name)
    started = time.perf_counter()
    _frame(spark).write.parquet(path)  # type: ignore[attr-defined]
    spark.read.parquet(path).createOrReplaceTempView(name)
    return time.perf_counter() - started


def _release(address: str, workspace: Path) -> tuple[float, float]:
    spark = SparkSession.builder.remote(address).create()
    started = time.perf_counter()
    for i in range(RELEASE_TABLES):
        spark.sql(f"CREATE TEMP TABLE t{i} AS SELECT {i} AS n").collect()
    filled = time.perf_counter() - started
    folder = workspace / spark.client._session_id
    assert len(list(folder.iterdir())) == RELEASE_TABLES
    started = time.perf_counter()
    spark.stop()
    released = time.perf_counter() - started
    assert not folder.exists(), "the session folder survived the release"
    return filled, released


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="temp-table-bench-") as tmp:
        root = Path(tmp)
        config = Config(
            local=True, port=0, workspace=root / "workspace", state_dir=root / "state", conf_dir=None
        )
        with Stack(config) as stack:
            assert stack.gateway is not None
            address = stack.gateway.address
            spark = SparkSession.builder.remote(address).create()
            try:
                _cttas(spark, "warm_cttas")
                _by_hand(spark, root, "warm_hand")
                cttas, hand = [], []
                for _ in range(RUNS):
                    name = f"b_{uuid.uuid4().hex[:8]}"
                    cttas.append(_cttas(spark, name))
                    hand.append(_by_hand(spark, root, name + "_hand"))
            finally:
                spark.stop()
            filled, released = _release(address, config.workspace)
    c, h = statistics.median(cttas), statistics.median(hand)
    ratio = c / h
    print(f"{ROWS:,} rows as parquet, median of {RUNS} interleaved runs through the gateway:")
    print(f"  CTTAS                                    {c:.3f} s  (runs {', '.join(f'{x:.2f}' for x in cttas)})")
    print(f"  write.parquet + createOrReplaceTempView {h:.3f} s  (runs {', '.join(f'{x:.2f}' for x in hand)})")
    verdict = "met" if ratio <= RATIO_TARGET else "MISSED"
    print(f"  ratio CTTAS / by hand = {ratio:.3f}  (target <= {RATIO_TARGET}: {verdict})")
    verdict = "met" if released < RELEASE_TARGET_S else "MISSED"
    print(
        f"release of a session with {RELEASE_TABLES} temp tables: {released * 1000:.0f} ms "
        f"(target < {RELEASE_TARGET_S * 1000:.0f} ms: {verdict}); creating them took {filled:.1f} s"
    )
