"""Run by test_thin_client.py with the thin pyspark-client: temp tables end to end.

Prints one JSON object with what it saw; the test asserts on it.
"""

from __future__ import annotations

import json
import os
import sys

import pyspark
from pyspark.sql import SparkSession

import connect_plugin


def main(address: str) -> None:
    jars = os.path.isdir(os.path.join(os.path.dirname(pyspark.__file__), "jars"))
    spark = SparkSession.builder.remote(address).getOrCreate()
    try:
        frame = spark.range(10).selectExpr("id", "id % 2 AS k")
        created = connect_plugin.create_temp_table(frame, "thin_t", partition_by=["k"])
        by_sql = spark.sql("CREATE TEMP TABLE thin_sql USING json AS SELECT 'a' AS s").collect()
        count = connect_plugin.temp_table(spark, "thin_t").where("k = 1").count()
        listed = sorted(r["name"] for r in connect_plugin.temp_tables(spark).collect())
        dropped = connect_plugin.drop_temp_table(spark, "thin_t")
        seen = {
            "version": pyspark.__version__,
            "jars": jars,
            "created": list(created),
            "sql": [list(r) for r in by_sql],
            "count": count,
            "listed": listed,
            "dropped": list(dropped),
        }
        print(json.dumps(seen))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
