"""Drill's scan-lifecycle cases through the gateway: two files in one scan, read by Spark.

The same cases run in-process in tests/unit/scanning/reading/test_scan_two_readers.py,
test_scan_missing_columns.py and test_scan_implicit_columns.py; here they
go the whole way (stock client, gateway, Spark's Python data source) and
the rows and types checked are the ones Spark returns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

import connect_plugin

STANDARD = [{"a": 10, "b": "fred"}, {"a": 20, "b": "wilma"}]


def files(root: Path, contents: dict[str, list[dict[str, Any]]]) -> str:
    for name, records in contents.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(root)


def scanned(
    spark: SparkSession, root: str, **options: Any
) -> tuple[list[tuple[str, str]], list[tuple[Any, ...]]]:
    df = connect_plugin.scan(spark, root, format="json", **options)
    return df.dtypes, [tuple(r) for r in df.collect()]


def test_two_null_readers(spark: SparkSession, tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testTwoNullReaders."""
    assert scanned(spark, files(tmp_path, {"1.json": [], "2.json": []})) == ([], [])


def test_null_then_valid_reader(spark: SparkSession, tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testNullThenValidReader."""
    root = files(tmp_path, {"1.json": [], "2.json": STANDARD})
    assert scanned(spark, root) == (
        [("a", "bigint"), ("b", "string")],
        [(10, "fred"), (20, "wilma")],
    )


@pytest.mark.parametrize("strict", [False, True])
def test_shrinking_schema(spark: SparkSession, tmp_path: Path, strict: bool) -> None:
    """Drill TestScanLifecycleTwoReaders.testShrinkingSchema."""
    root = files(tmp_path, {"1.json": STANDARD, "2.json": [{"a": 101}]})
    dtypes, rows = scanned(spark, root, strict=strict)
    assert dtypes == [("a", "bigint"), ("b", "string")]
    assert rows[-1] == (101, None)


def test_expanding_schema_allowing_schema_change(spark: SparkSession, tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testExpandingSchemaAllowingSchemaChange."""
    root = files(tmp_path, {"1.json": STANDARD, "2.json": [{"a": 1, "b": "w", "c": 1001}]})
    assert scanned(spark, root) == (
        [("a", "bigint"), ("b", "string"), ("c", "bigint")],
        [(10, "fred", None), (20, "wilma", None), (1, "w", 1001)],
    )


def test_expanding_schema_disallowing_schema_change(spark: SparkSession, tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testExpandingSchemaDisallowingSchemaChange."""
    root = files(tmp_path, {"1.json": STANDARD, "2.json": [{"a": 1, "b": "w", "c": 1001}]})
    assert scanned(spark, root, strict=True)[1] == [(10, "fred"), (20, "wilma"), (1, "w")]


def test_early_schema_type_conflict(spark: SparkSession, tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testEarlySchemaTypeConflict."""
    root = files(tmp_path, {"1.json": STANDARD, "2.json": [{"a": 30, "b": 40}]})
    with pytest.raises(AnalysisException) as caught:
        scanned(spark, root)
    assert f"string in file {tmp_path / '1.json'}" in str(caught.value)
    assert f"int64 in file {tmp_path / '2.json'}" in str(caught.value)


def test_column_reordering_ba(spark: SparkSession, tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testColumnReorderingBA."""
    root = files(tmp_path, {"1.json": [{"b": "barney", "a": 30}], "2.json": STANDARD})
    assert scanned(spark, root)[1] == [("barney", 30), ("fred", 10), ("wilma", 20)]


def test_specified_column_order(spark: SparkSession, tmp_path: Path) -> None:
    """Drill TestScanLifecycleTwoReaders.testSpecifiedColumnOrder."""
    root = files(tmp_path, {"1.json": [{"b": "barney", "a": 30}], "2.json": STANDARD})
    assert scanned(spark, root, columns=["a", "b"])[1] == [
        (30, "barney"),
        (10, "fred"),
        (20, "wilma"),
    ]


def test_wildcard_with_explicit_with_provided(spark: SparkSession, tmp_path: Path) -> None:
    """Drill TestScanSchemaTracker.testWildcardWithExplicitWithProvided: *, then a provided schema."""
    root = files(tmp_path, {"1.json": [{"b": "x", "a": 1, "c": True}]})
    dtypes, rows = scanned(spark, root, schema="a INT, b STRING")
    assert dtypes == [("a", "int"), ("b", "string"), ("c", "boolean")]
    assert rows == [(1, "x", True)]


def test_missing_column_basics(spark: SparkSession, tmp_path: Path) -> None:
    """Drill TestMissingColumnLoader.testBasics: unknown columns are null, typed where a schema says."""
    root = files(tmp_path, {"1.json": [{"a": 1}]})
    dtypes, rows = scanned(spark, root, columns=["a", "unknown", "typed"], schema="typed INT")
    assert dtypes == [("a", "bigint"), ("unknown", "string"), ("typed", "int")]
    assert rows == [(1, None, None)]


def test_file_implicit_column_selection(spark: SparkSession, tmp_path: Path) -> None:
    """Drill TestImplicitColumnResolver.testFileImplicitColumnSelection and testPartitionColumnSelection."""
    root = files(tmp_path, {"x/y/f.json": [{"a": 1}]})
    dtypes, rows = scanned(spark, root, columns=["a", "fqn", "suffix", "dir1", "dir9"])
    assert [name for name, _ in dtypes] == ["a", "fqn", "suffix", "dir1", "dir9"]
    assert rows == [(1, str(tmp_path / "x" / "y" / "f.json"), "json", "y", None)]
