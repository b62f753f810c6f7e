"""Filters comparing a struct column with struct values, on a temp table of each format that
holds structs, through the gateway and a real Spark Connect server.

Spark's json reader failed such a query when it pushed the filter into its parser
(``FAILED_READ_FILE``, caused by ``empty.reduceLeft`` in ``JsonFilters``); found by the DML
differential as ``INSERT INTO t SELECT ... FROM t WHERE k IN (...)`` on a json table.
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

FORMATS = ("parquet", "json", "orc")
ROWS = (
    "SELECT * FROM VALUES (1, named_struct('x', 1L)), (2, named_struct('x', 2L)), "
    "(3, CAST(NULL AS STRUCT<x: BIGINT>)) AS v(id, k)"
)
FILTERS = {
    "k IN (named_struct('x', 1L), named_struct('x', 5L))": [1],
    "k IN (named_struct('x', 2L), NULL)": [2],
    "k <=> named_struct('x', 2L)": [2],
    "k > named_struct('x', 1L) OR id = 1": [1, 2],
    "NOT (k IN (named_struct('x', 1L)))": [2],
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_struct_compared_with_struct_values_filters_the_rows(
    spark: SparkSession, unique_name: str, fmt: str
) -> None:
    spark.sql(f"CREATE TEMPORARY TABLE {unique_name} USING {fmt} AS {ROWS}")
    try:
        for condition, ids in FILTERS.items():
            found = spark.sql(f"SELECT id FROM {unique_name} WHERE {condition}").collect()
            assert sorted(row.id for row in found) == ids, condition
        spark.sql(
            f"INSERT INTO {unique_name} SELECT id + 10, k FROM {unique_name} "
            "WHERE k IN (named_struct('x', 1L), named_struct('x', 5L))"
        )
        assert spark.table(unique_name).count() == 4
    finally:
        spark.sql(f"DROP TABLE {unique_name}")
