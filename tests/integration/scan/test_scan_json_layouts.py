"""Json as people write it, end to end: lines, top-level arrays and documents.

The stock pyspark client talks to the gateway in front of a real Spark
Connect server; every layout goes through Spark's Python workers.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import SparkRuntimeException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import connect_plugin
from tests.json_layouts import RECORDS, WRITERS, as_array, as_documents, as_lines


def folder_name(layout: str) -> str:
    return layout.replace(", ", "_").replace(" ", "_")


def rows(df: Any) -> list[dict[str, Any]]:
    return [row.asDict(recursive=True) for row in df.collect()]


def scan(spark: SparkSession, path: Path, **options: Any) -> Any:
    return connect_plugin.scan(spark, str(path), format="json", **options)


def test_the_reported_array_gives_both_records_not_an_empty_row(
    spark: SparkSession, tmp_path: Path
) -> None:
    (tmp_path / "a.json").write_text('[{"id": 1}, {"id": 2}]')
    df = scan(spark, tmp_path)
    assert df.columns == ["id"]
    assert rows(df) == [{"id": 1}, {"id": 2}]
    assert df.count() == 2


def test_each_layout_alone_with_nested_arrays_of_objects(
    spark: SparkSession, tmp_path: Path
) -> None:
    for name, write in WRITERS.items():
        folder = tmp_path / folder_name(name)
        folder.mkdir()
        (folder / "data.json").write_text(write(RECORDS))
    df = connect_plugin.scan(spark, f"{tmp_path}/*/*.json", format="json", columns=["*", "dir0"])
    assert df.dtypes[:3] == [
        ("id", "bigint"), ("name", "string"), ("items", "array<struct<sku:string,n:bigint>>"),
    ]  # fmt: skip
    by_folder: dict[str, list[dict[str, Any]]] = {}
    for row in rows(df.orderBy("dir0", "id")):
        by_folder.setdefault(row.pop("dir0"), []).append(row)
    assert by_folder == {folder_name(name): RECORDS for name in WRITERS}
    counted = df.groupBy("dir0").count().collect()
    assert {r["dir0"]: r["count"] for r in counted} == {folder_name(n): 3 for n in WRITERS}


def test_all_layouts_mixed_in_one_folder_with_drifting_schemas(
    spark: SparkSession, tmp_path: Path
) -> None:
    (tmp_path / "1.json").write_text(as_lines([{"id": 1, "v": 1}]))
    (tmp_path / "2.json").write_text(as_array([{"id": 2, "v": 2.5, "tag": "t"}], indent=2))
    (tmp_path / "3.json").write_text(as_documents([{"id": 3, "m": {"k": [1, 2]}}, {"id": 4}]))
    df = scan(spark, tmp_path, columns=["*", "filename"])
    assert df.dtypes == [
        ("id", "bigint"), ("v", "double"), ("tag", "string"),
        ("m", "struct<k:array<bigint>>"), ("filename", "string"),
    ]  # fmt: skip
    assert rows(df.orderBy("id")) == [
        {"id": 1, "v": 1.0, "tag": None, "m": None, "filename": "1.json"},
        {"id": 2, "v": 2.5, "tag": "t", "m": None, "filename": "2.json"},
        {"id": 3, "v": None, "tag": None, "m": {"k": [1, 2]}, "filename": "3.json"},
        {"id": 4, "v": None, "tag": None, "m": None, "filename": "3.json"},
    ]
    rescued = scan(spark, tmp_path, schema="id BIGINT", evolution="rescue").orderBy("id").collect()
    extras = [None if r["_rescued_data"] is None else json.loads(r["_rescued_data"]) for r in rescued]
    assert extras[1] == {"v": 2.5, "tag": "t", "_file_path": str(tmp_path / "2.json")}
    assert extras[2] == {"m": {"k": [1, 2]}, "_file_path": str(tmp_path / "3.json")}


BAD = {
    "array": ('[{"id": 1}, 5, {"id": 3}]', "line 1 (byte offset 12): an array element that is a number"),
    "documents": ('{\n "id": 1\n}\n"x"\n{"id": 3}', "line 4 (byte offset 13): a top-level value that is a string"),
    "lines": ('{"id": 1}\n{"id": \n{"id": 3}\n', "line 2: malformed json"),
}


@pytest.mark.parametrize("layout", list(BAD))
def test_a_bad_record_fails_the_query_naming_file_and_position(
    spark: SparkSession, tmp_path: Path, layout: str
) -> None:
    text, where = BAD[layout]
    path = tmp_path / "a.json"
    path.write_text(text)
    with pytest.raises(SparkRuntimeException, match=re.escape(f"file {path}, {where}")):
        scan(spark, tmp_path).collect()


def test_bad_records_of_every_layout_skipped_or_nulled(spark: SparkSession, tmp_path: Path) -> None:
    for layout, (text, _) in BAD.items():
        (tmp_path / f"{layout}.json").write_text(text)
    skipped = scan(spark, tmp_path, on_error="skip", columns=["id", "filename"])
    assert sorted((r["filename"], r["id"]) for r in skipped.collect()) == [
        (f"{layout}.json", n) for layout in sorted(BAD) for n in (1, 3)
    ]
    nulled = scan(spark, tmp_path, on_error="null", columns=["id", "filename"])
    assert sorted(
        ((r["filename"], r["id"]) for r in nulled.collect()), key=lambda r: (r[0], r[1] or 0)
    ) == [(f"{layout}.json", n) for layout in sorted(BAD) for n in (None, 1, 3)]


def test_an_empty_array_and_a_file_of_scalars(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_text("[ ]\n")
    (tmp_path / "data.json").write_text(as_array([{"id": 7}]))
    assert rows(scan(spark, tmp_path)) == [{"id": 7}]
    assert scan(spark, tmp_path).count() == 1
    (tmp_path / "numbers.json").write_text("[1, 2]")
    with pytest.raises(SparkRuntimeException, match="an array element that is a number, not an object"):
        scan(spark, tmp_path / "numbers.json").collect()


def test_the_layout_option_and_compressed_documents(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(as_array(RECORDS))
    with pytest.raises(SparkRuntimeException, match="the record is an array, not a json object"):
        scan(spark, tmp_path, options={"json_format": "lines"}).collect()
    assert scan(spark, tmp_path, options={"json_format": "array"}).count() == 3
    packed = tmp_path / "packed"
    packed.mkdir()
    (packed / "b.json.gz").write_bytes(gzip.compress(as_documents(RECORDS).encode()))
    df = scan(spark, packed)
    assert rows(df.select("id", F.size("items").alias("n"))) == [
        {"id": 1, "n": 2}, {"id": 2, "n": 0}, {"id": 3, "n": 1},
    ]  # fmt: skip
