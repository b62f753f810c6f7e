"""The README's first command: the embedded stack and one short client session."""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from connect_plugin.config import Config
from connect_plugin.server.stack import Stack


def _say(text: str) -> None:
    print(f"[demo] {text}", flush=True)


def _temp_tables(spark: Any) -> None:
    """CTTAS, a query over the table, SHOW, the Python API and DROP."""
    import connect_plugin

    created = spark.sql(
        "CREATE TEMPORARY TABLE squares PARTITIONED BY (parity) AS "
        "SELECT id, id * id AS square, IF(id % 2 = 0, 'even', 'odd') AS parity FROM range(1000)"
    ).first()
    _say(f"CREATE TEMPORARY TABLE squares ...: {created['rows_written']} rows written")
    sums = spark.sql("SELECT parity, sum(square) AS s FROM squares GROUP BY parity ORDER BY parity")
    _say(f"SELECT over the temp table: {[(r.parity, r.s) for r in sums.collect()]}")
    connect_plugin.create_temp_table(spark.range(3), "session.small", format="json")
    listed = spark.sql("SHOW TEMPORARY TABLES").collect()
    _say(f"SHOW TEMPORARY TABLES: {[(r['name'], r['format'], r['rows']) for r in listed]}")
    dropped = spark.sql("DROP TABLE squares").first()
    _say(f"DROP TABLE squares: {dropped['summary']}")


def _drifting_files(root: Path) -> None:
    """Three small json files that drift: a column added later, an int that becomes a double."""
    files = {
        "2024/01/a.json": [
            {"id": 1, "level": "info", "ms": 12},
            {"id": 2, "level": "warn", "ms": 7},
        ],
        "2024/02/b.json": [{"id": 3, "level": "info", "ms": 3.5, "host": "web-2"}],
        "2025/c.json": [{"ID": 4, "Level": "error"}],
    }
    for name, records in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(record) + "\n" for record in records))


def _scans(spark: Any) -> None:
    """A schema-on-read scan over drifting files, with file and partition columns."""
    from connect_plugin.client import scan

    with tempfile.TemporaryDirectory(prefix="connect-plugin-demo-") as folder:
        root = Path(folder)
        _drifting_files(root)
        logs = scan(spark, str(root), format="json")
        _say(f"scan(root, format='json'): {', '.join(f'{n} {t}' for n, t in logs.dtypes)}")
        for row in logs.orderBy("id").collect():
            _say(f"  {tuple(row)}")
        picked = scan(spark, str(root), format="json", columns=["ID", "filename", "dir0"])
        recent = picked.where("dir0 = '2025'").collect()
        _say(
            f"columns=['ID', 'filename', 'dir0'] where dir0 = '2025': {[tuple(r) for r in recent]}"
        )
        _say(f"count() without decoding a value: {logs.count()}")


QUICK_COMPILER = "-XX:TieredStopAtLevel=1"
"""The JVM's quick compiler alone: a run of half a minute on small data ends before the
optimising compiler pays back the processor time it takes (on two cores, the demo took 20 s
of processor time instead of 35 s, and 25 s instead of 32-41 s to run)."""


def run_demo(config: Config) -> int:
    """Start Spark Connect and the gateway, talk to them as a user would, stop.

    A demo runs once: it writes no JVM class archive, which only pays from a
    machine's second start on and makes the first start and stop slower, and
    its JVM compiles with the quick compiler only (``QUICK_COMPILER``).
    """
    from pyspark.sql.connect.session import SparkSession

    config = dataclasses.replace(config, class_archive=False)
    started = time.monotonic()
    _say("starting an embedded Spark Connect server and the gateway ...")
    with Stack(config, jvm_options=(QUICK_COMPILER,)) as stack:
        assert stack.gateway is not None
        _say(
            f"Spark Connect at {stack.upstream}, gateway at {stack.gateway.address} "
            f"({time.monotonic() - started:.1f} s)"
        )
        spark = SparkSession.builder.remote(stack.gateway.address).create()
        try:
            _say(
                f"connected through the gateway: Spark {spark.version}, session {spark.session_id}"
            )
            total = spark.range(1_000_000).selectExpr("sum(id) AS total").first()
            _say(
                f"spark.range(1_000_000) summed on the server: {total['total'] if total else None}"
            )
            people = spark.createDataFrame(
                [("ada", 36), ("grace", 45), ("linus", 28)], "name string, age int"
            )
            people.createOrReplaceTempView("people")
            rows = spark.sql("SELECT name FROM people WHERE age > 30 ORDER BY name").collect()
            _say(f"SQL over a DataFrame sent from the client: {[row.name for row in rows]}")
            table = spark.range(5).selectExpr("id", "id * id AS square").toArrow()
            _say(f"toArrow(): {table.num_rows} rows, columns {table.column_names}")
            _temp_tables(spark)
            _scans(spark)
        finally:
            spark.stop()
        _say(
            f"session released; gateway forwarded {stack.gateway.calls('ExecutePlan')} ExecutePlan calls"
        )
    _say(f"stopped everything after {time.monotonic() - started:.1f} s")
    return 0
