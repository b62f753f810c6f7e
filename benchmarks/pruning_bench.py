"""What file pruning saves: a filter that selects 1 of 16 partitions, pruned and not, in one run.

``PARTITIONS`` hive folders (``part=0`` .. ``part=15``) of json lines, ``ROWS``
rows in all (the scan benchmark's six columns), read through the gateway,
interleaved, after a warm-up, the median of ``RUNS`` runs of each:

- pruned: ``scan(...).where("part = 7").toArrow()``: the gateway reads the
  filter into the scan, which opens one folder of sixteen;
- not pruned: ``scan(...).where("part + 0 = 7").toArrow()``: the same rows,
  but the gateway cannot read a function of the column, so every file is
  opened and Spark drops fifteen sixteenths of the rows;
- Spark's own reader, ``spark.read.schema(ddl).json(root).where("part = 7")``,
  which prunes partitions by itself: the reference.

Each query runs on a new DataFrame and, between them, the same scan
DataFrame is read whole, so a pruned query can only be fast by pruning,
never by a stale reader. Target: not pruned / pruned >= 3 (sixteen times
less to read, against fixed costs of about half a second per query).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession

import connect_plugin
from benchmarks.scan_bench import DDL, _json_lines, _table
from benchmarks.server import Options, gateway, shared_folder

PARTITIONS = 16
ROWS = 1_600_000
RUNS = 5
CHOSEN = 7
TARGET = 3.0


def _write(root: Path) -> None:
    per_partition = ROWS // PARTITIONS
    for part in range(PARTITIONS):
        folder = root / f"part={part}"
        folder.mkdir(parents=True)
        table = _table(per_partition, part * per_partition)
        (folder / "data.json").write_bytes(_json_lines(table))


def _measures(spark: SparkSession, root: Path) -> dict[str, Callable[[], int]]:
    def scan() -> DataFrame:
        return connect_plugin.scan(spark, str(root), format="json", schema=DDL, partitioning="hive")

    return {
        "pruned": lambda: scan().where(f"part = {CHOSEN}").toArrow().num_rows,
        "not pruned": lambda: scan().where(f"part + 0 = {CHOSEN}").toArrow().num_rows,
        "spark.read": lambda: spark.read.schema(DDL)
        .json(str(root))
        .where(f"part = {CHOSEN}")
        .toArrow()
        .num_rows,
    }


def main(options: Options) -> dict[str, float]:
    with shared_folder(options, "pruning-bench-") as root:
        data = root / "data"
        print(f"writing {ROWS:,} rows in {PARTITIONS} partitions ...", flush=True)
        _write(data)
        with gateway(options, root) as server:
            print(f"server: {server.label}", flush=True)
            spark = SparkSession.builder.remote(server.address).create()
            try:
                timings = _run(spark, data)
            finally:
                spark.stop()
    medians = {name: statistics.median(values) for name, values in timings.items()}
    for name, seconds in medians.items():
        print(f"{name:>12}: {seconds:.3f} s")
    ratio = medians["not pruned"] / medians["pruned"]
    verdict = "met" if ratio >= TARGET else "NOT met"
    print(f"target not pruned / pruned = {ratio:.2f} (>= {TARGET}): {verdict}")
    print(f"spark.read / pruned = {medians['spark.read'] / medians['pruned']:.2f}")
    return medians


def _run(spark: SparkSession, data: Path) -> dict[str, list[float]]:
    measures = _measures(spark, data)
    whole = connect_plugin.scan(spark, str(data), format="json", schema=DDL, partitioning="hive")
    expected = ROWS // PARTITIONS
    timings: dict[str, list[float]] = {name: [] for name in measures}
    for run in range(RUNS + 1):
        for name, measure in measures.items():
            started = time.perf_counter()
            rows = measure()
            elapsed = time.perf_counter() - started
            if rows != expected:
                raise AssertionError(f"{name} gave {rows} rows, expected {expected}")
            if run:
                timings[name].append(elapsed)
            if whole.count() != ROWS:
                raise AssertionError("the whole scan lost rows after a filtered query")
    return timings
