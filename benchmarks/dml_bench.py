"""What a row change of a temp table costs: UPDATE, DELETE and MERGE vs doing it by hand.

Through one gateway in front of one Spark Connect server (embedded, or the
one ``--remote`` names), interleaved: an UPDATE and a DELETE of 10 % of a
``ROWS``-row temp table, and a MERGE of ``MERGE_ROWS`` source rows (half
matching) into it, against the same change by hand in Spark: read the
table, transform, write a new parquet folder, replace the view. Both sides
start from the same rows each run; the medians' ratios are reported.
Target (issue 25): change / by hand <= 1.1 for each statement.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from pyspark.sql.connect.session import SparkSession

from benchmarks.server import Options, gateway, shared_folder

ROWS = 2_000_000
MERGE_ROWS = 100_000
RUNS = 5
RATIO_TARGET = 1.1
SOURCE = (
    f"SELECT id * 2 AS id, -id AS v, 'merged' AS s FROM range({MERGE_ROWS // 2}) UNION ALL "
    f"SELECT {ROWS} + id AS id, id AS v, 'new' AS s FROM range({MERGE_ROWS // 2})"
)
TABLE = f"SELECT id, id % 1000 AS v, CAST(id AS STRING) AS s FROM range({ROWS})"

STATEMENTS = {
    "update": "UPDATE {t} SET v = v + 1, s = 'changed' WHERE id % 10 = 0",
    "delete": "DELETE FROM {t} WHERE id % 10 = 0",
    "merge": (
        "MERGE INTO {t} USING source ON {t}.id = source.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    ),
}
BY_HAND = {
    "update": "SELECT id, CASE WHEN id % 10 = 0 THEN v + 1 ELSE v END AS v, "
    "CASE WHEN id % 10 = 0 THEN 'changed' ELSE s END AS s FROM {t}",
    "delete": "SELECT * FROM {t} WHERE NOT (id % 10 = 0)",
    "merge": "SELECT coalesce(source.id, {t}.id) AS id, "
    "CASE WHEN source.id IS NULL THEN {t}.v ELSE source.v END AS v, "
    "CASE WHEN source.id IS NULL THEN {t}.s ELSE source.s END AS s "
    "FROM {t} FULL OUTER JOIN source ON {t}.id = source.id",
}


def _timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _statement(spark: SparkSession, kind: str) -> float:
    name = f"t_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TEMPORARY TABLE {name} USING parquet AS {TABLE}")
    took = _timed(lambda: spark.sql(STATEMENTS[kind].format(t=name)).collect())
    spark.sql(f"DROP TABLE {name}")
    return took


def _by_hand(spark: SparkSession, root: Path, kind: str) -> float:
    name = f"h_{uuid.uuid4().hex[:8]}"
    spark.sql(TABLE).write.parquet(str(root / name))
    spark.read.parquet(str(root / name)).createOrReplaceTempView(name)

    def change() -> None:
        new = str(root / f"{name}_new")
        spark.sql(BY_HAND[kind].format(t=name)).write.parquet(new)
        spark.read.parquet(new).createOrReplaceTempView(name)

    took = _timed(change)
    spark.catalog.dropTempView(name)
    return took


def main(options: Options) -> dict[str, float]:
    figures: dict[str, float] = {}
    with shared_folder(options, "dml-bench-") as root, gateway(options, root) as server:
        print(f"server: {server.label}", flush=True)
        spark = SparkSession.builder.remote(server.address).create()
        try:
            spark.sql(SOURCE).createOrReplaceTempView("source")
            _statement(spark, "delete")
            _by_hand(spark, root, "delete")
            for kind in STATEMENTS:
                ours, hand = [], []
                for _ in range(RUNS):
                    ours.append(_statement(spark, kind))
                    hand.append(_by_hand(spark, root, kind))
                ratio = statistics.median(ours) / statistics.median(hand)
                figures[f"{kind}_s"] = statistics.median(ours)
                figures[f"{kind}_by_hand_s"] = statistics.median(hand)
                figures[f"{kind}_ratio"] = ratio
                verdict = "meets" if ratio <= RATIO_TARGET else "misses"
                print(
                    f"{kind} of a {ROWS:,}-row temp table: {statistics.median(ours):.2f} s, by "
                    f"hand {statistics.median(hand):.2f} s, ratio {ratio:.2f} ({verdict} the "
                    f"target {RATIO_TARGET})",
                    flush=True,
                )
        finally:
            spark.stop()
    return figures
