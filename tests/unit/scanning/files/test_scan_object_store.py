"""Scans of an S3-compatible object store (moto on loopback) through pyarrow.fs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connect_plugin.errors import InvalidScanSpec, ScanPathNotFound
from connect_plugin.scanning import (
    PartitionFilter,
    ScanReader,
    ScanSpec,
    clear_schema_cache,
    plan_scan,
    prune,
)
from tests.object_store import REGION, ObjectStore
from tests.unit.scanning.scan_checks import read, rows, types


def lines(*records: dict[str, object]) -> bytes:
    return "".join(json.dumps(record) + "\n" for record in records).encode()


@pytest.fixture
def bucket(object_store: ObjectStore) -> str:
    """A bucket with json under two years, a gzip file and a parquet file."""
    clear_schema_cache()
    name = object_store.new_bucket()
    object_store.put(f"{name}/logs/2023/a.json", lines({"id": 1, "v": "x"}, {"id": 2}))
    object_store.put(f"{name}/logs/2024/b.json", lines({"id": 3, "v": "y", "w": 1.5}))
    object_store.put(f"{name}/logs/2024/c.json.gz", gzip.compress(lines({"id": 4})))
    object_store.put(f"{name}/logs/_SUCCESS", b"")
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [5, 6]}), sink)
    object_store.put(f"{name}/tables/t.parquet", sink.getvalue().to_pybytes())
    return name


def spec(store: ObjectStore, *paths: str, **options: object) -> ScanSpec:
    return ScanSpec(list(paths), options.pop("format", "json"), **options, options=store.options)  # type: ignore[arg-type]


def test_lists_samples_and_reads_a_prefix_with_dirs_and_urls(
    object_store: ObjectStore, bucket: str
) -> None:
    scan = spec(object_store, f"s3://{bucket}/logs", columns=["*", "fqn", "filepath"])
    plan = plan_scan(scan)
    assert [f.url for f in plan.files] == [
        f"s3://{bucket}/logs/2023/a.json",
        f"s3://{bucket}/logs/2024/b.json",
        f"s3://{bucket}/logs/2024/c.json.gz",
    ]
    table = read(scan)
    assert types(table) == {
        "id": "int64",
        "v": "string",
        "w": "double",
        "dir0": "string",
        "fqn": "string",
        "filepath": "string",
    }
    assert [(r["id"], r["dir0"], r["fqn"]) for r in rows(table)] == [
        (1, "2023", f"s3://{bucket}/logs/2023/a.json"),
        (2, "2023", f"s3://{bucket}/logs/2023/a.json"),
        (3, "2024", f"s3://{bucket}/logs/2024/b.json"),
        (4, "2024", f"s3://{bucket}/logs/2024/c.json.gz"),
    ]
    assert rows(table)[0]["filepath"] == f"s3://{bucket}/logs/2023"


def test_globs_pruning_and_counts(object_store: ObjectStore, bucket: str) -> None:
    globbed = plan_scan(spec(object_store, f"s3://{bucket}/logs/*/*.json"))
    assert [f.path.rsplit("/", 1)[1] for f in globbed.files] == ["a.json", "b.json"]
    plan = plan_scan(spec(object_store, f"s3://{bucket}/logs", columns=["id", "dir0"]))
    kept = prune(plan, [PartitionFilter("eq", "dir0", "2024")])
    assert [f.url.rsplit("/", 1)[1] for f in kept] == ["b.json", "c.json.gz"]
    assert ScanReader(plan).read_table(kept).column("id").to_pylist() == [3, 4]
    counted = read(spec(object_store, f"s3://{bucket}/logs", columns=[]))
    assert counted.num_rows == 4
    parquet = read(spec(object_store, f"s3://{bucket}/tables", format="parquet"))
    assert parquet.column("id").to_pylist() == [5, 6]


def test_credentials_from_the_environment(
    object_store: ObjectStore, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", object_store.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", object_store.secret_key)
    monkeypatch.setenv("AWS_ENDPOINT_URL", object_store.endpoint)
    monkeypatch.setenv("AWS_REGION", REGION)
    table = read(ScanSpec([f"s3://{bucket}/logs/2023"], "json"))
    assert table.column("id").to_pylist() == [1, 2]


def test_storage_options_stay_out_of_the_json_and_the_repr(
    object_store: ObjectStore, bucket: str
) -> None:
    scan = spec(object_store, f"s3://{bucket}/logs")
    secret = object_store.secret_key
    assert secret not in scan.to_json()
    assert secret not in repr(scan)
    assert object_store.endpoint not in scan.to_json()
    assert scan.options == {}
    carried = scan.secret_options()
    assert all("secret" in name for name in carried)
    back = ScanSpec.from_json(scan.to_json(), ScanSpec.storage_from_options(carried))
    assert back == scan
    assert read(back).num_rows == 4


def test_errors_name_the_path_or_the_option(
    object_store: ObjectStore, bucket: str, tmp_path: Path
) -> None:
    with pytest.raises(ScanPathNotFound, match=f"s3://{bucket}/nothing"):
        plan_scan(spec(object_store, f"s3://{bucket}/nothing"))
    with pytest.raises(InvalidScanSpec, match="one file system"):
        plan_scan(ScanSpec([f"s3://{bucket}/logs", str(tmp_path)], "json"))
    with pytest.raises(InvalidScanSpec, match=r"'s3\.password' is not a storage option"):
        ScanSpec([f"s3://{bucket}/logs"], "json", options={"s3.password": "x"})
    with pytest.raises(InvalidScanSpec, match="need s3:// paths"):
        plan_scan(ScanSpec([str(tmp_path)], "json", options=object_store.options))
