"""Scan answers at the edges (issue 44): names in any case, names shared with implicit
columns, byte order marks, big integers, rescued data, ragged headerless records, type
clashes under every policy, counts of every projection, files that change after planning.

Each case is a user's scan through the stock pyspark client, the gateway and a real Spark
Connect server, checked on the rows and counts Spark returns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import AnalysisException, SparkRuntimeException
from pyspark.errors.exceptions.connect import SparkConnectGrpcException
from pyspark.sql import SparkSession

import connect_plugin
from tests.unit.scanning.scan_checks import write_json, write_text


def rows(df: Any) -> list[dict[str, Any]]:
    return [row.asDict(recursive=True) for row in df.collect()]


def by_id(df: Any) -> list[dict[str, Any]]:
    return sorted(rows(df), key=lambda r: (r["id"] is None, r["id"]))


def rescued(text: str | None) -> dict[str, Any] | None:
    """A rescued object without its file key."""
    if text is None:
        return None
    values: dict[str, Any] = json.loads(text)
    values.pop("_file_path")
    return values


# Names


def test_a_schema_names_a_file_key_in_another_case(spark: SparkSession, tmp_path: Path) -> None:
    """docs/scans.md's first example: `ID` in columns and schema, `id` in the file."""
    write_json(tmp_path / "a.json", [{"id": 1, "ms": 2.5}, {"id": 2, "ms": 3}])
    df = connect_plugin.scan(
        spark, str(tmp_path), format="json", columns=["ID", "ms"], schema="ID BIGINT, ms DOUBLE"
    )
    assert df.columns == ["ID", "ms"]
    assert sorted(rows(df), key=lambda r: r["ID"]) == [{"ID": 1, "ms": 2.5}, {"ID": 2, "ms": 3.0}]


def test_keys_in_another_case_in_one_file_are_one_column(
    spark: SparkSession, tmp_path: Path
) -> None:
    write_json(tmp_path / "a.json", [{"id": 1, "A": 8}, {"id": 2, "a": 7}])
    df = connect_plugin.scan(spark, str(tmp_path), format="json")
    assert df.columns == ["id", "A"]
    assert by_id(df) == [{"id": 1, "A": 8}, {"id": 2, "A": 7}]
    kept = connect_plugin.scan(spark, str(tmp_path), format="json", rescued_column="_rescued")
    assert by_id(kept) == [{"id": 1, "A": 8, "_rescued": None}, {"id": 2, "A": 7, "_rescued": None}]


def test_keys_in_another_case_in_two_files_are_one_column(
    spark: SparkSession, tmp_path: Path
) -> None:
    write_json(tmp_path / "a.json", [{"id": 1, "A": 8}])
    write_json(tmp_path / "b.json", [{"id": 2, "a": 7}])
    df = connect_plugin.scan(spark, str(tmp_path), format="json")
    assert by_id(df) == [{"id": 1, "A": 8}, {"id": 2, "A": 7}]


def test_keys_that_fold_to_a_name_through_a_sharp_s(spark: SparkSession, tmp_path: Path) -> None:
    """Case folding makes 'ß' and 'ẞ' 'ss': 'Straße', 'STRAẞE' and an escaped 'ß' are
    the column 'strasse', as the sample says, in every file."""
    write_json(tmp_path / "a.json", [{"id": 1, "strasse": "a"}])
    write_text(tmp_path / "b.json", '{"id": 2, "Straße": "b"}\n')
    write_text(tmp_path / "c.json", '{"id": 3, "STRA\u1e9eE": "c"}\n')
    write_text(tmp_path / "d.json", '{"id": 4, "stra\\u00dfe": "d"}\n')
    df = connect_plugin.scan(spark, str(tmp_path), format="json", columns=["id", "strasse"])
    assert by_id(df) == [{"id": i, "strasse": v} for i, v in enumerate("abcd", start=1)]


def test_two_keys_of_one_record_that_fold_together(spark: SparkSession, tmp_path: Path) -> None:
    """Neither value is dropped in silence: a bad record, or the other one rescued."""
    write_json(tmp_path / "a.json", [{"id": 1, "A": 5, "a": 6}, {"id": 2, "A": 3}])
    failing = connect_plugin.scan(spark, str(tmp_path), format="json")
    with pytest.raises(SparkRuntimeException) as caught:
        failing.collect()
    assert caught.value.getCondition() == "CONNECT_PLUGIN.SCAN_BAD_RECORD"
    assert "'A' and 'a'" in str(caught.value).splitlines()[0]
    with pytest.raises(SparkRuntimeException):
        failing.count()
    skipped = connect_plugin.scan(spark, str(tmp_path), format="json", on_error="skip")
    assert by_id(skipped) == [{"id": 2, "A": 3}]
    assert skipped.count() == 1
    nulled = connect_plugin.scan(spark, str(tmp_path), format="json", on_error="null")
    assert by_id(nulled) == [{"id": 1, "A": None}, {"id": 2, "A": 3}]
    kept = connect_plugin.scan(spark, str(tmp_path), format="json", rescued_column="_rescued")
    got = [{**row, "_rescued": rescued(row["_rescued"])} for row in by_id(kept)]
    assert got == [{"id": 1, "A": 5, "_rescued": {"a": 6}}, {"id": 2, "A": 3, "_rescued": None}]


def test_a_temp_table_column_named_like_an_implicit_column(
    spark: SparkSession, unique_name: str
) -> None:
    spark.sql(
        f"CREATE TEMPORARY TABLE {unique_name} AS "
        "SELECT id, 'x' AS dir0, 'y' AS filename FROM range(2)"
    )
    try:
        expected = [{"id": 0, "dir0": "x", "filename": "y"}, {"id": 1, "dir0": "x", "filename": "y"}]
        assert by_id(spark.table(unique_name)) == expected
        assert by_id(connect_plugin.scan(spark, table=unique_name)) == expected
        listed = connect_plugin.scan(spark, table=unique_name, columns=["id", "dir0", "filename"])
        assert by_id(listed) == expected
    finally:
        spark.sql(f"DROP TABLE {unique_name}")


def test_a_json_key_named_like_an_implicit_column(spark: SparkSession, tmp_path: Path) -> None:
    write_json(tmp_path / "d" / "a.json", [{"id": 1, "filename": "mine", "dir0": "own"}])
    whole = connect_plugin.scan(spark, str(tmp_path), format="json")
    assert whole.columns == ["id", "filename", "dir0"]
    assert rows(whole) == [{"id": 1, "filename": "mine", "dir0": "own"}]
    listed = connect_plugin.scan(
        spark, str(tmp_path), format="json", columns=["id", "filename", "dir0", "suffix"]
    )
    assert rows(listed) == [{"id": 1, "filename": "mine", "dir0": "own", "suffix": "json"}]


def test_a_csv_header_with_a_byte_order_mark(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_bytes("\ufeffid,name\n1,a\n".encode())
    df = connect_plugin.scan(spark, str(tmp_path), format="csv", options={"header": "true"})
    assert df.columns == ["id", "name"]
    assert rows(df) == [{"id": "1", "name": "a"}]
    assert df.count() == 1


def test_a_file_in_utf16_is_an_unreadable_file(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes('{"id": 1}\n'.encode("utf-16"))
    df = connect_plugin.scan(spark, str(tmp_path), format="json", on_error="skip")
    with pytest.raises(SparkConnectGrpcException) as caught:
        df.collect()
    assert caught.value.getCondition() == "CONNECT_PLUGIN.SCAN_UNREADABLE_FILE"
    assert "UTF-16" in str(caught.value).splitlines()[0]


# Values


def test_rescued_lists_and_big_integers_are_kept_exactly(
    spark: SparkSession, tmp_path: Path
) -> None:
    write_json(
        tmp_path / "a.json",
        [
            {"id": 1, "l": [None, 17]},
            {"id": 2, "l": [5, 13]},
            {"id": 3, "l": [7]},
            {"id": 4, "big": 9007199254740993},
            {"id": 5, "big": 0.5},
        ],
    )
    df = connect_plugin.scan(spark, str(tmp_path), format="json", schema="id BIGINT", evolution="rescue")
    got = {row["id"]: rescued(row["_rescued_data"]) for row in rows(df)}
    assert got == {
        1: {"l": [None, 17]},
        2: {"l": [5, 13]},
        3: {"l": [7]},
        4: {"big": 9007199254740993},
        5: {"big": 0.5},
    }


def test_parquet_integers_widened_to_double_beyond_2_pow_53(
    spark: SparkSession, tmp_path: Path
) -> None:
    big = 4025664719519337086
    pq.write_table(pa.table({"v": pa.array([1, big, -big], pa.int64())}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"v": pa.array([1.5], pa.float64())}), tmp_path / "b.parquet")
    for on_error in ("fail", "skip"):
        df = connect_plugin.scan(spark, str(tmp_path), format="parquet", on_error=on_error)
        assert df.dtypes == [("v", "double")]
        assert sorted(row["v"] for row in rows(df)) == [-float(big), 1.0, 1.5, float(big)]
        assert df.count() == 4


@pytest.mark.parametrize("file_format", ["csv", "tsv"])
def test_headerless_records_of_another_width(
    spark: SparkSession, tmp_path: Path, file_format: str
) -> None:
    delimiter = "," if file_format == "csv" else "\t"
    lines = ["a,b,c", "4,5", "6,7,8,9", "1,2,3"]
    write_text(tmp_path / f"a.{file_format}", "".join(line.replace(",", delimiter) + "\n" for line in lines))
    failing = connect_plugin.scan(spark, str(tmp_path), format=file_format)
    with pytest.raises(SparkRuntimeException) as caught:
        failing.collect()
    assert caught.value.getCondition() == "CONNECT_PLUGIN.SCAN_BAD_RECORD"
    with pytest.raises(SparkRuntimeException):
        failing.count()
    skipped = connect_plugin.scan(spark, str(tmp_path), format=file_format, on_error="skip")
    assert sorted(row["columns"] for row in rows(skipped)) == [["1", "2", "3"], ["a", "b", "c"]]
    assert skipped.count() == 2
    nulled = connect_plugin.scan(spark, str(tmp_path), format=file_format, on_error="null")
    assert sorted(row["columns"] for row in rows(nulled)) == [
        ["1", "2", "3"],
        ["4", "5", None],
        ["6", "7", "8"],
        ["a", "b", "c"],
    ]
    assert nulled.count() == 4


def test_a_type_clash_inside_the_sample_under_each_policy(
    spark: SparkSession, tmp_path: Path
) -> None:
    write_json(tmp_path / "a.json", [{"id": 1}, {"id": 2}, {"id": "x"}])
    with pytest.raises(AnalysisException) as caught:
        connect_plugin.scan(spark, str(tmp_path), format="json").collect()
    assert caught.value.getCondition() == "CONNECT_PLUGIN.SCAN_SCHEMA_CONFLICT"
    nulled = connect_plugin.scan(spark, str(tmp_path), format="json", on_error="null")
    assert nulled.dtypes == [("id", "bigint")]
    assert sorted(rows(nulled), key=repr) == [{"id": 1}, {"id": 2}, {"id": None}]
    assert nulled.count() == 3
    skipped = connect_plugin.scan(spark, str(tmp_path), format="json", on_error="skip")
    assert sorted(row["id"] for row in rows(skipped)) == [1, 2]
    assert skipped.count() == 2
    kept = connect_plugin.scan(spark, str(tmp_path), format="json", rescued_column="_rescued")
    got = sorted(((r["id"], rescued(r["_rescued"])) for r in rows(kept)), key=repr)
    assert got == [(1, None), (2, None), (None, {"id": "x"})]


def test_a_type_clash_across_files_under_skip(spark: SparkSession, tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", [{"id": 1}])
    write_json(tmp_path / "b.json", [{"id": "x"}, {"id": 3}])
    skipped = connect_plugin.scan(spark, str(tmp_path), format="json", on_error="skip")
    assert skipped.dtypes == [("id", "bigint")]
    assert sorted(row["id"] for row in rows(skipped)) == [1, 3]
    assert skipped.count() == 2


@pytest.mark.parametrize("columns", [[], ["filename"], ["id"], None])
def test_a_count_under_fail_fails_for_every_projection(
    spark: SparkSession, tmp_path: Path, columns: list[str] | None
) -> None:
    write_json(tmp_path / "a.json", [{"id": 1}, "not json", {"id": 2}])
    df = connect_plugin.scan(spark, str(tmp_path), format="json", columns=columns)
    with pytest.raises(SparkRuntimeException):
        df.collect()
    with pytest.raises(SparkRuntimeException):
        df.count()
    skipped = connect_plugin.scan(spark, str(tmp_path), format="json", columns=columns, on_error="skip")
    assert len(skipped.collect()) == 2
    assert skipped.count() == 2


def test_a_file_deleted_after_planning(spark: SparkSession, tmp_path: Path) -> None:
    """Every query reads the files there are when it runs: none fails, all agree."""
    write_json(tmp_path / "a.json", [{"id": 1}, {"id": 2}])
    gone = write_json(tmp_path / "b.json", [{"id": 3}])
    df = connect_plugin.scan(spark, str(tmp_path), format="json")
    assert df.count() == 3
    assert df.columns == ["id"]
    gone.unlink()
    assert sorted(row["id"] for row in rows(df)) == [1, 2]
    assert df.count() == 2
    assert df.where("id > 0").count() == 2
    write_json(tmp_path / "c.json", [{"id": 4}])
    assert sorted(row["id"] for row in rows(df)) == [1, 2, 4]
    assert df.count() == 3
    assert df.where("id > 0").count() == 3


# Views


def test_a_view_column_list_gives_only_those_columns(spark: SparkSession, tmp_path: Path) -> None:
    write_json(tmp_path / "2024" / "05" / "a.json", [{"id": 1, "ms": 5}])
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW listed_columns (id BIGINT) USING scan "
        f"OPTIONS (path '{tmp_path}', format 'json')"
    )
    view = spark.table("listed_columns")
    assert view.dtypes == [("id", "bigint")]
    assert rows(view) == [{"id": 1}]


def test_struct_members_in_two_cases_are_one_member(spark: SparkSession, tmp_path: Path) -> None:
    write_json(tmp_path / "j" / "a.json", [{"id": 1, "m": {"a": 1}}, {"id": 2, "m": {"A": 2}}])
    df = connect_plugin.scan(spark, str(tmp_path / "j"), format="json")
    assert df.dtypes == [("id", "bigint"), ("m", "struct<a:bigint>")]
    assert by_id(df) == [{"id": 1, "m": {"a": 1}}, {"id": 2, "m": {"a": 2}}]
    pq.write_table(pa.table({"m": [{"a": 1}]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"m": [{"A": 2}]}), tmp_path / "b.parquet")
    parquet = connect_plugin.scan(spark, str(tmp_path / "*.parquet"), format="parquet")
    assert sorted(row["m"]["a"] for row in rows(parquet)) == [1, 2]
