"""The whole Python API through a gateway, run by the Python of a separately installed environment.

Usage: python api_session.py sc://host:port DATA_DIR

Queries, Arrow and pandas results, an error, temporary tables from SQL and
from Python, and scans (json with drift and directory columns, a filter on a
directory column, a count, parquet with zoned timestamps and lists, a temp
table, a missing path, a filter on a directory column that prunes a folder
holding a bad record, and the same scan read whole after a filtered query).
Prints one JSON object with what it saw, the same for
every client and server version, plus where its packages came from; the
tests compare it. Runs on Python 3.10+ with only connect_plugin and the Spark
Connect client installed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


def _rows(frame: Any) -> list[list[Any]]:
    """Rows as lists of strings, in a stable order."""
    rows = [[None if v is None else str(v) for v in row] for row in frame.collect()]
    return sorted(rows, key=json.dumps)


def _first_line(exc: BaseException, data_dir: str) -> str:
    """The first line of an error, the data directory left out (it differs per run)."""
    return str(exc).splitlines()[0].replace(data_dir, "DATA")


def main(address: str, data_dir: str) -> dict[str, Any]:
    import pyspark
    from pyspark.errors import AnalysisException, PythonException, SparkRuntimeException
    from pyspark.sql import SparkSession

    import connect_plugin

    seen: dict[str, Any] = {
        "pyspark": pyspark.__version__,
        "pyspark_file": pyspark.__file__,
        "connect_plugin_file": connect_plugin.__file__,
        "jars": os.path.isdir(os.path.join(os.path.dirname(pyspark.__file__), "jars")),
    }
    started = time.monotonic()
    spark = SparkSession.builder.remote(address).create()
    try:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        seen["sum"] = spark.range(10).selectExpr("sum(id) AS s").first()["s"]
        seen["arrow_rows"] = spark.range(5000).toArrow().num_rows
        seen["pandas"] = spark.range(3).toPandas()["id"].tolist()
        try:
            spark.sql("SELECT * FROM no_such_table_anywhere").collect()
        except AnalysisException as exc:
            seen["error"] = exc.getCondition()

        frame = spark.range(10).selectExpr("id", "id % 2 AS k")
        seen["created"] = list(connect_plugin.create_temp_table(frame, "api_t", partition_by=["k"]))
        seen["sql"] = _rows(spark.sql("CREATE TEMP TABLE api_sql USING json AS SELECT 'a' AS s"))
        seen["count"] = connect_plugin.temp_table(spark, "api_t").where("k = 1").count()
        seen["joined"] = spark.sql(
            "SELECT count(*) AS n FROM api_t JOIN api_sql ON api_t.k = 0"
        ).first()["n"]
        seen["listed"] = sorted(r["name"] for r in connect_plugin.temp_tables(spark).collect())
        seen["seconds_before_scans"] = round(time.monotonic() - started, 2)

        logs = os.path.join(data_dir, "logs")
        scanned = connect_plugin.scan(spark, logs, format="json", columns=["id", "ms", "host", "dir0"])
        seen["scan_schema"] = [[f.name, f.dataType.simpleString()] for f in scanned.schema.fields]
        seen["scan_rows"] = _rows(scanned)
        seen["scan_filtered"] = _rows(scanned.where("dir0 = '2025'"))
        seen["scan_after_filter"] = len(_rows(scanned))
        seen["scan_count"] = connect_plugin.scan(spark, logs, format="json").count()
        events = connect_plugin.scan(spark, os.path.join(data_dir, "events"), format="parquet")
        seen["events_schema"] = [[f.name, f.dataType.simpleString()] for f in events.schema.fields]
        seen["events"] = _rows(events.selectExpr("id", "date_format(ts, 'yyyy-MM-dd HH:mm') AS ts", "tags"))
        seen["scan_table"] = connect_plugin.scan(spark, table="api_t").where("k = 0").count()
        parts = connect_plugin.scan(
            spark, os.path.join(data_dir, "parts"), format="json", columns=["id", "dir0"]
        )
        try:
            seen["pruned"] = _rows(parts.where("dir0 = 'good'"))
        except (PythonException, SparkRuntimeException) as exc:
            seen["pruned"] = f"read the excluded file: {'bad' in str(exc)}"
        try:
            seen["scan_bad_record"] = _rows(parts)
        except SparkRuntimeException as exc:
            seen["scan_bad_record"] = [exc.getCondition(), _first_line(exc, data_dir)]
        try:
            missing = connect_plugin.scan(spark, os.path.join(data_dir, "nothing"), format="json")
            seen["scan_missing"] = missing.columns
        except AnalysisException as exc:
            seen["scan_missing"] = [exc.getCondition(), _first_line(exc, data_dir)]

        seen["dropped"] = list(connect_plugin.drop_temp_table(spark, "api_t"))
        seen["left"] = sorted(r["name"] for r in connect_plugin.temp_tables(spark).collect())
    finally:
        spark.stop()
    seen["seconds"] = round(time.monotonic() - started, 2)
    return seen


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
