"""``count()`` over a scan is what reading it gives: the same number, or the same failure.

The gateway turns a scan's ``count()`` into per-file counts summed by
Spark; each file is read as a query reads it, so a count never succeeds
where reading fails and never counts a record reading drops.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import SparkRuntimeException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import connect_plugin

POLICIES = ("fail", "skip", "null")


def _outcome(action: Any) -> Any:
    try:
        return action()
    except SparkRuntimeException as exc:
        return "fails: " + ("bad record" if "line" in str(exc) else str(exc)[:200])


def _both(df: Any) -> tuple[Any, Any]:
    return _outcome(lambda: len(df.collect())), _outcome(df.count)


@pytest.fixture(scope="module")
def broken_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """100 good lines and one malformed one."""
    root = tmp_path_factory.mktemp("broken_json")
    lines = [f'{{"id": {i}}}' for i in range(100)] + ['{"id": 100']
    (root / "a.json").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def ragged_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A header of three fields, then a short and a long record among good ones."""
    root = tmp_path_factory.mktemp("ragged_csv")
    (root / "a.csv").write_text("a,b,c\n1,2,3\n4,5\n6,7,8,9\n10,11,12\n")
    return root


@pytest.mark.parametrize("policy", POLICIES)
def test_a_malformed_json_line_counts_as_reading_takes_it(
    spark: SparkSession, broken_json: Path, policy: str
) -> None:
    df = connect_plugin.scan(spark, str(broken_json), format="json", on_error=policy)
    expected = {"fail": "fails: bad record", "skip": 100, "null": 101}[policy]
    assert _both(df) == (expected, expected)
    assert _outcome(lambda: df.agg(F.count("*")).first()[0]) == expected


@pytest.mark.parametrize("policy", POLICIES)
def test_short_and_long_csv_records_are_bad_records(
    spark: SparkSession, ragged_csv: Path, policy: str
) -> None:
    df = connect_plugin.scan(
        spark, str(ragged_csv), format="csv", options={"header": "true"}, on_error=policy
    )
    expected = {"fail": "fails: bad record", "skip": 2, "null": 4}[policy]
    assert _both(df) == (expected, expected)


def test_null_keeps_a_ragged_record_with_the_fields_it_has(
    spark: SparkSession, ragged_csv: Path
) -> None:
    df = connect_plugin.scan(
        spark, str(ragged_csv), format="csv", options={"header": "true"}, on_error="null"
    )
    assert sorted(tuple(row) for row in df.collect()) == [
        ("1", "2", "3"),
        ("10", "11", "12"),
        ("4", "5", None),
        ("6", "7", "8"),
    ]


def test_an_empty_projection_counts_as_it_reads(
    spark: SparkSession, ragged_csv: Path, broken_json: Path
) -> None:
    """``columns=[]`` reads no values, but judges records as reading any column does: a
    malformed json line fails under ``fail``, is dropped under ``skip``, is a row under
    ``null``; csv records are judged by their number of fields."""
    json_df = connect_plugin.scan(spark, str(broken_json), format="json", columns=[])
    first, second = _both(json_df)
    assert str(first).startswith("fails"), first
    assert str(second).startswith("fails"), second
    for on_error, rows in (("skip", 100), ("null", 101)):
        judged = connect_plugin.scan(
            spark, str(broken_json), format="json", columns=[], on_error=on_error
        )
        assert _both(judged) == (rows, rows)
    csv_df = connect_plugin.scan(
        spark, str(ragged_csv), format="csv", options={"header": "true"}, columns=[],
        on_error="skip",
    )  # fmt: skip
    assert _both(csv_df) == (2, 2)


def test_parquet_counts_from_footers_or_by_reading(spark: SparkSession, tmp_path: Path) -> None:
    pq.write_table(pa.table({"v": pa.array([1, 2**40, 3], pa.int64())}), tmp_path / "a.parquet")
    plain = connect_plugin.scan(spark, str(tmp_path), format="parquet")
    assert _both(plain) == (3, 3)
    narrowed = connect_plugin.scan(
        spark, str(tmp_path), format="parquet", schema="v INT", on_error="skip"
    )
    assert _both(narrowed) == (2, 2)
    failing = connect_plugin.scan(spark, str(tmp_path), format="parquet", schema="v INT")
    first, second = _both(failing)
    assert first == second
    assert str(first).startswith("fails")
