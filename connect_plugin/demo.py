"""The README's first command: the embedded stack and one short client session."""

from __future__ import annotations

import time
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
    connect_plugin.create_temp_table(spark.range(3), "tmp.small", format="json")
    listed = spark.sql("SHOW TEMPORARY TABLES").collect()
    _say(f"SHOW TEMPORARY TABLES: {[(r['name'], r['format'], r['rows']) for r in listed]}")
    dropped = spark.sql("DROP TABLE squares").first()
    _say(f"DROP TABLE squares: {dropped['summary']}")


def run_demo(config: Config) -> int:
    """Start Spark Connect and the gateway, talk to them as a user would, stop."""
    from pyspark.sql.connect.session import SparkSession

    started = time.monotonic()
    _say("starting an embedded Spark Connect server and the gateway ...")
    with Stack(config) as stack:
        assert stack.gateway is not None
        _say(
            f"Spark Connect at {stack.upstream}, gateway at {stack.gateway.address} "
            f"({time.monotonic() - started:.1f} s)"
        )
        spark = SparkSession.builder.remote(stack.gateway.address).create()
        try:
            _say(f"connected through the gateway: Spark {spark.version}, session {spark.session_id}")
            total = spark.range(1_000_000).selectExpr("sum(id) AS total").first()
            _say(f"spark.range(1_000_000) summed on the server: {total['total'] if total else None}")
            people = spark.createDataFrame(
                [("ada", 36), ("grace", 45), ("linus", 28)], "name string, age int"
            )
            people.createOrReplaceTempView("people")
            rows = spark.sql("SELECT name FROM people WHERE age > 30 ORDER BY name").collect()
            _say(f"SQL over a DataFrame sent from the client: {[row.name for row in rows]}")
            table = spark.range(5).selectExpr("id", "id * id AS square").toArrow()
            _say(f"toArrow(): {table.num_rows} rows, columns {table.column_names}")
            _temp_tables(spark)
        finally:
            spark.stop()
        _say(f"session released; gateway forwarded {stack.gateway.calls('ExecutePlan')} ExecutePlan calls")
    _say(f"stopped everything after {time.monotonic() - started:.1f} s")
    return 0
