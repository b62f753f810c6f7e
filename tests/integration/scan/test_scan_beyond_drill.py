"""Rescued data, evolution modes, compressed files and object stores, end to end.

The stock pyspark client talks to the gateway in front of a real Spark
Connect server; the object store is moto's S3 server on a loopback port,
which Spark's Python workers reach with the credentials the scan carries.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import SparkRuntimeException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import connect_plugin
from tests.integration.support import Upstream
from tests.object_store import ObjectStore


def lines(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(record) + "\n" for record in records).encode()


def rescued(df: Any, column: str = "_rescued_data") -> list[Any]:
    return [None if r[column] is None else json.loads(r[column]) for r in df.collect()]


@pytest.fixture
def growing(tmp_path: Path) -> Path:
    (tmp_path / "1.json").write_bytes(lines([{"id": 1, "name": "a"}]))
    (tmp_path / "2.json").write_bytes(lines([{"id": 2, "name": "b", "added": 2.5}]))
    return tmp_path


def test_rescued_data_keeps_values_that_do_not_fit_and_fields_outside_the_schema(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(lines([{"n": 1}, {"n": "lots"}, {"n": 3, "other": [1, 2]}]))
    df = connect_plugin.scan(
        spark, str(tmp_path), format="json", schema="n BIGINT", strict=True,
        rescued_column="_rescued_data",
    )  # fmt: skip
    assert df.dtypes == [("n", "bigint"), ("_rescued_data", "string")]
    assert [r["n"] for r in df.collect()] == [1, None, 3]
    assert rescued(df) == [
        None,
        {"n": "lots", "_file_path": str(path)},
        {"other": [1, 2], "_file_path": str(path)},
    ]


def test_rescued_data_from_csv_on_both_paths(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text("id,name,note\n1,a,hi\nzwei,b,yo\n")
    df = connect_plugin.scan(
        spark, str(tmp_path), format="csv", schema="id INT, name STRING", strict=True,
        rescued_column="r", options={"header": "true"},
    )  # fmt: skip
    assert [r["id"] for r in df.collect()] == [1, None]
    assert rescued(df, "r") == [
        {"note": "hi", "_file_path": str(path)},
        {"id": "zwei", "note": "yo", "_file_path": str(path)},
    ]


def test_evolution_modes(spark: SparkSession, growing: Path) -> None:
    added = connect_plugin.scan(spark, str(growing), format="json")
    assert added.columns == ["id", "name", "added"]
    ignored = connect_plugin.scan(spark, str(growing), format="json", evolution="none")
    assert ignored.columns == ["id", "name"]
    assert len(ignored.collect()) == 2
    kept = connect_plugin.scan(spark, str(growing), format="json", evolution="rescue")
    assert kept.columns == ["id", "name", "_rescued_data"]
    assert rescued(kept) == [None, {"added": 2.5, "_file_path": str(growing / "2.json")}]


def test_fail_on_new_columns_names_the_file_and_the_columns(
    spark: SparkSession, growing: Path
) -> None:
    df = connect_plugin.scan(spark, str(growing), format="json", evolution="fail_on_new_columns")
    with pytest.raises(Exception, match=r"2\.json has new column\(s\) 'added'") as caught:
        df.collect()
    assert "evolution='add_new_columns'" in str(caught.value)
    with pytest.raises(ValueError, match="evolution must be one of"):
        connect_plugin.scan(spark, str(growing), format="json", evolution="sometimes")


def test_fail_on_new_columns_past_the_sample_fails_the_read(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(lines([{"id": n} for n in range(30_000)] + [{"id": 0, "late": True}]))
    df = connect_plugin.scan(spark, str(tmp_path), format="json", evolution="fail_on_new_columns")
    assert df.columns == ["id"]
    with pytest.raises(SparkRuntimeException, match=r"has new column\(s\) 'late'"):
        df.collect()


def test_compressed_files_by_extension_and_by_option(spark: SparkSession, tmp_path: Path) -> None:
    records = [{"id": n, "s": f"v{n}"} for n in range(1000)]
    (tmp_path / "gz").mkdir()
    (tmp_path / "gz" / "a.json.gz").write_bytes(gzip.compress(lines(records[:600])))
    with pa.output_stream(str(tmp_path / "gz" / "b.json.zst"), compression="zstd") as out:
        out.write(lines(records[600:]))
    df = connect_plugin.scan(spark, str(tmp_path / "gz"), format="json", columns=["id", "suffix"])
    assert df.agg(F.count("*"), F.sum("id")).collect()[0] == (1000, sum(range(1000)))
    assert sorted({r["suffix"] for r in df.collect()}) == ["gz", "zst"]
    assert connect_plugin.scan(spark, str(tmp_path / "gz"), format="json").count() == 1000
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "events.log").write_bytes(gzip.compress(b"one\ntwo\n"))
    text = connect_plugin.scan(spark, str(tmp_path / "raw"), format="text", compression="gzip")
    assert [r["columns"] for r in text.collect()] == [["one"], ["two"]]


@pytest.fixture
def bucket(object_store: ObjectStore) -> str:
    name = object_store.new_bucket()
    object_store.put(f"{name}/logs/2023/a.json", lines([{"id": 1, "v": "x"}, {"id": 2}]))
    object_store.put(f"{name}/logs/2024/b.json", lines([{"id": 3, "v": "y", "w": 1.5}]))
    object_store.put(f"{name}/logs/2024/c.json.gz", gzip.compress(lines([{"id": 4}])))
    return name


def test_object_store_listing_sampling_reading_urls_globs_pruning_and_counts(
    spark: SparkSession, object_store: ObjectStore, bucket: str
) -> None:
    options = object_store.options
    root = f"s3://{bucket}/logs"
    df = connect_plugin.scan(spark, root, format="json", columns=["*", "fqn"], options=options)
    assert df.dtypes == [
        ("id", "bigint"),
        ("v", "string"),
        ("w", "double"),
        ("dir0", "string"),
        ("fqn", "string"),
    ]
    assert sorted((r["id"], r["dir0"], r["fqn"]) for r in df.collect()) == [
        (1, "2023", f"{root}/2023/a.json"),
        (2, "2023", f"{root}/2023/a.json"),
        (3, "2024", f"{root}/2024/b.json"),
        (4, "2024", f"{root}/2024/c.json.gz"),
    ]
    assert connect_plugin.scan(spark, root, format="json", options=options).count() == 4
    globbed = connect_plugin.scan(spark, f"{root}/*/*.json", format="json", options=options)
    assert sorted(r["id"] for r in globbed.collect()) == [1, 2, 3]
    pruned = connect_plugin.scan(
        spark, root, format="json", columns=["id", "dir0"], options=options
    ).where(F.col("dir0") == "2024")
    assert sorted(r["id"] for r in pruned.collect()) == [3, 4]


def test_object_store_credentials_are_not_printed(
    spark: SparkSession, object_store: ObjectStore, bucket: str, upstream: Upstream
) -> None:
    df = connect_plugin.scan(
        spark, f"s3://{bucket}/logs", format="json", options=object_store.options
    )
    assert df.count() == 4
    plan = df._explain_string(extended=True)
    assert "connect_plugin_scan" in plan or "PythonDataSource" in plan or "BatchScan" in plan
    for secret in (object_store.secret_key, object_store.access_key):
        assert secret not in plan
        if upstream.log_path is not None:
            assert secret not in upstream.log_path.read_text()
