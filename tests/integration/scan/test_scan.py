"""Scans end to end: the stock pyspark client, the gateway and a real Spark Connect server.

Each behaviour of ``connect_plugin.scan`` is checked on the rows and types
Spark returns to the client, over files written by the test.
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
from pyspark.sql import functions as F

import connect_plugin
from tests.integration.support import Upstream
from tests.unit.scanning.scan_checks import write_json


def rows(df: Any) -> list[dict[str, Any]]:
    return [row.asDict(recursive=True) for row in df.collect()]


@pytest.fixture(scope="module")
def drifting(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three json files that drift: a column added, a type widened, a name re-cased."""
    root = tmp_path_factory.mktemp("drifting")
    write_json(root / "0.json", [{"id": 1, "name": "a", "score": 1}])
    write_json(root / "2024" / "b.json", [{"id": 2, "name": "b", "score": 2.5, "extra": "x"}])
    write_json(root / "2024" / "03" / "c.json", [{"ID": 3, "Name": "c"}])
    return root


def test_wildcard_gives_first_file_order_then_dirs_and_widens(
    spark: SparkSession, drifting: Path
) -> None:
    df = connect_plugin.scan(spark, str(drifting), format="json")
    assert df.dtypes == [
        ("id", "bigint"),
        ("name", "string"),
        ("score", "double"),
        ("extra", "string"),
        ("dir0", "string"),
        ("dir1", "string"),
    ]
    assert sorted(rows(df), key=lambda r: r["id"]) == [
        {"id": 1, "name": "a", "score": 1.0, "extra": None, "dir0": None, "dir1": None},
        {"id": 2, "name": "b", "score": 2.5, "extra": "x", "dir0": "2024", "dir1": None},
        {"id": 3, "name": "c", "score": None, "extra": None, "dir0": "2024", "dir1": "03"},
    ]


def test_ndjson_is_another_name_for_json_from_python_and_sql(
    spark: SparkSession, drifting: Path
) -> None:
    by_name = connect_plugin.scan(spark, str(drifting), format="json")
    by_alias = connect_plugin.scan(spark, str(drifting), format="ndjson")
    assert by_alias.dtypes == by_name.dtypes
    expected = sorted(rows(by_name), key=lambda r: r["id"])
    assert sorted(rows(by_alias), key=lambda r: r["id"]) == expected
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW drifting_ndjson USING scan OPTIONS "
        f"(path '{drifting}', format 'NDJSON')"
    )
    assert sorted(rows(spark.table("drifting_ndjson")), key=lambda r: r["id"]) == expected


def test_explicit_columns_match_without_case_and_keep_the_spelling(
    spark: SparkSession, drifting: Path
) -> None:
    df = connect_plugin.scan(
        spark, str(drifting), format="json", columns=["NAME", "dir0", "Id", "filename", "nothing"]
    )
    assert df.columns == ["NAME", "dir0", "Id", "filename", "nothing"]
    assert dict(df.dtypes)["nothing"] == "string"
    assert sorted(tuple(r) for r in df.collect()) == [
        ("a", None, 1, "0.json", None),
        ("b", "2024", 2, "b.json", None),
        ("c", "2024", 3, "c.json", None),
    ]


def test_nested_members_and_list_elements(spark: SparkSession, tmp_path: Path) -> None:
    write_json(
        tmp_path / "n.json",
        [{"m": {"a": 1, "b": {"c": "deep"}}, "l": [10, 20]}, {"m": {"a": 2}, "l": [30]}],
    )
    df = connect_plugin.scan(spark, str(tmp_path), format="json", columns=["M.A", "m.b.c", "l[1]"])
    assert df.dtypes == [("M.A", "bigint"), ("m.b.c", "string"), ("l[1]", "bigint")]
    assert [tuple(r) for r in df.collect()] == [(1, "deep", 20), (2, None, None)]


def test_headerless_csv_is_a_columns_list_with_elements_by_index(
    spark: SparkSession, tmp_path: Path
) -> None:
    (tmp_path / "h.csv").write_text('a,b,c\n"d,e",f\n')
    whole = connect_plugin.scan(spark, str(tmp_path), format="csv", on_error="null")
    assert whole.dtypes == [("columns", "array<string>")]
    assert [r["columns"] for r in whole.collect()] == [["a", "b", "c"], ["d,e", "f", None]]
    picked = connect_plugin.scan(
        spark, str(tmp_path), format="csv", columns=["columns[2]", "columns[0]"], on_error="null"
    )
    assert [tuple(r) for r in picked.collect()] == [("c", "a"), (None, "d,e")]


def test_implicit_file_columns_only_when_named(spark: SparkSession, drifting: Path) -> None:
    df = connect_plugin.scan(
        spark,
        str(drifting / "2024" / "03"),
        format="json",
        columns=["id", "filename", "FilePath", "fqn", "suffix"],
    )
    path = drifting / "2024" / "03" / "c.json"
    assert [tuple(r) for r in df.collect()] == [(3, "c.json", str(path.parent), str(path), "json")]
    assert "filename" not in connect_plugin.scan(spark, str(drifting), format="json").columns


def test_a_glob_roots_partition_columns_at_its_first_wildcard(
    spark: SparkSession, drifting: Path
) -> None:
    df = connect_plugin.scan(
        spark, str(drifting / "2*" / "*.json"), format="json", columns=["id", "dir0", "dir1"]
    )
    assert [tuple(r) for r in df.collect()] == [(2, "2024", None)]


def test_hive_partitioning_gives_typed_columns(spark: SparkSession, tmp_path: Path) -> None:
    write_json(tmp_path / "year=2023" / "city=Paris" / "a.json", [{"v": 1}])
    write_json(tmp_path / "year=2024" / "city=Oslo" / "b.json", [{"v": 2}])
    df = connect_plugin.scan(spark, str(tmp_path), format="json", partitioning="hive")
    assert df.dtypes == [("v", "bigint"), ("year", "bigint"), ("city", "string")]
    assert df.where(F.col("year") > 2023).collect() == [(2, 2024, "Oslo")]


def test_missing_columns_take_the_type_known_from_other_files(
    spark: SparkSession, drifting: Path
) -> None:
    df = connect_plugin.scan(spark, str(drifting), format="json", columns=["score", "ghost"])
    assert df.dtypes == [("score", "double"), ("ghost", "string")]
    assert sorted(r["score"] or 0.0 for r in df.collect()) == [0.0, 1.0, 2.5]
    typed = connect_plugin.scan(
        spark, str(drifting), format="json", columns=["ghost"], schema="ghost DATE"
    )
    assert typed.dtypes == [("ghost", "date")]
    assert [r["ghost"] for r in typed.collect()] == [None, None, None]


def test_a_type_conflict_names_both_files_the_column_and_both_types(
    spark: SparkSession, tmp_path: Path
) -> None:
    first = write_json(tmp_path / "1.json", [{"b": "text"}])
    second = write_json(tmp_path / "2.json", [{"b": 5}])
    with pytest.raises(AnalysisException) as caught:
        connect_plugin.scan(spark, str(tmp_path), format="json").collect()
    for part in ("column 'b'", "string", "int64", str(first), str(second)):
        assert part in str(caught.value)
    settled = connect_plugin.scan(spark, str(tmp_path), format="json", schema="b STRING")
    assert sorted(r["b"] for r in settled.collect()) == ["5", "text"]


def test_strict_keeps_the_first_files_columns(spark: SparkSession, drifting: Path) -> None:
    df = connect_plugin.scan(spark, str(drifting), format="json", strict=True)
    assert df.columns == ["id", "name", "score", "dir0", "dir1"]
    assert len(df.collect()) == 3


def test_a_provided_schema_fixes_types_and_order_and_extras_follow(
    spark: SparkSession, drifting: Path
) -> None:
    df = connect_plugin.scan(
        spark, str(drifting), format="json", schema="score DECIMAL(5,2), id INT"
    )
    assert df.dtypes[:2] == [("score", "decimal(5,2)"), ("id", "int")]
    assert df.columns[2:] == ["name", "extra", "dir0", "dir1"]
    strict = connect_plugin.scan(
        spark, str(drifting), format="json", schema="score DOUBLE, id INT", strict=True
    )
    assert strict.columns == ["score", "id", "dir0", "dir1"]
    arrow = pa.schema([("id", pa.int16()), ("name", pa.string())])
    given = connect_plugin.scan(spark, str(drifting), format="json", schema=arrow, strict=True)
    assert given.dtypes[:2] == [("id", "smallint"), ("name", "string")]


def test_the_schema_is_planned_again_when_a_file_changes(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = write_json(tmp_path / "a.json", [{"a": 1}])
    assert connect_plugin.scan(spark, str(tmp_path), format="json").columns == ["a"]
    write_json(path, [{"a": 1, "b": True}])
    assert connect_plugin.scan(spark, str(tmp_path), format="json").dtypes == [
        ("a", "bigint"),
        ("b", "boolean"),
    ]


def test_a_json_field_changing_type_in_a_file_reads_through_the_row_path(
    spark: SparkSession, tmp_path: Path
) -> None:
    write_json(tmp_path / "a.json", [{"v": "text"}, {"v": 12}, {"v": {"k": [1]}}, {"v": True}])
    df = connect_plugin.scan(spark, str(tmp_path), format="json", schema="v STRING")
    assert [r["v"] for r in df.collect()] == ["text", "12", '{"k":[1]}', "true"]
    write_json(tmp_path / "a.json", [{"v": 1}, {"v": 2.5}])
    widened = connect_plugin.scan(spark, str(tmp_path), format="json")
    assert [tuple(r) for r in widened.collect()] == [(1.0,), (2.5,)]


BAD_JSON = '{"a": 1}\n{"a": \n{"a": "two"}\n{"a": 4}\n'


def test_bad_records_fail_naming_the_file_and_line(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(BAD_JSON)
    df = connect_plugin.scan(spark, str(tmp_path), format="json", schema="a BIGINT")
    with pytest.raises(SparkRuntimeException, match=f"file {path}, line 2: malformed json"):
        df.collect()


def test_bad_records_skipped_are_reported_in_the_server_log(
    spark: SparkSession, tmp_path: Path, upstream: Upstream
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(BAD_JSON)
    df = connect_plugin.scan(
        spark, str(tmp_path), format="json", schema="a BIGINT", on_error="skip"
    )
    assert [r["a"] for r in df.collect()] == [1, 4]
    if upstream.log_path is not None:
        assert f"file {path}: 2 bad record(s) skipped" in upstream.log_path.read_text()


def test_bad_records_nulled_keep_their_rows(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text(BAD_JSON)
    df = connect_plugin.scan(
        spark, str(tmp_path), format="json", schema="a BIGINT", on_error="null"
    )
    assert [r["a"] for r in df.collect()] == [1, None, None, 4]


def test_small_batch_limits_lose_no_rows(spark: SparkSession, tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", [{"n": i, "s": "v" * (i % 40)} for i in range(5000)])
    df = connect_plugin.scan(spark, str(tmp_path), format="json", max_rows=7, max_bytes=2048)
    assert df.agg(F.count("*"), F.sum("n"), F.sum(F.length("s"))).collect()[0] == (
        5000,
        sum(range(5000)),
        sum(i % 40 for i in range(5000)),
    )


def test_counts_fail_where_reading_fails_and_need_no_values_without_columns(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A value that does not convert fails reading, so it fails counting; no columns, no values."""
    (tmp_path / "bad.json").write_text('{"a": 1}\n{"a": "x"}\n{"a": 3}\n')
    decoded = connect_plugin.scan(spark, str(tmp_path), format="json", schema="a BIGINT")
    with pytest.raises(SparkRuntimeException, match="line 2"):
        decoded.collect()
    with pytest.raises(SparkRuntimeException, match="line 2"):
        decoded.count()
    empty = connect_plugin.scan(spark, str(tmp_path), format="json", columns=[])
    assert empty.columns == []
    assert empty.count() == len(empty.collect()) == 3
    nulled = connect_plugin.scan(
        spark, str(tmp_path), format="json", schema="a BIGINT", on_error="null"
    )
    assert nulled.select(F.count(F.lit(1)).alias("n")).collect()[0]["n"] == 3
    named = nulled.agg(F.count("*").alias("n"), F.count(F.lit(1)))
    assert named.dtypes == [("n", "bigint"), ("count(1)", "bigint")]
    assert tuple(named.collect()[0]) == (3, 3)


def test_counts_sum_every_file_and_are_zero_for_no_rows(
    spark: SparkSession, tmp_path: Path
) -> None:
    for index in range(5):
        write_json(tmp_path / f"d{index}" / "a.json", [{"a": i} for i in range(index * 10)])
    assert connect_plugin.scan(spark, str(tmp_path), format="json").count() == 100
    empty = tmp_path / "d0"
    assert connect_plugin.scan(spark, str(empty), format="json").count() == 0


def test_count_of_a_skipping_scan_counts_only_good_records(
    spark: SparkSession, tmp_path: Path
) -> None:
    (tmp_path / "bad.json").write_text(BAD_JSON)
    df = connect_plugin.scan(
        spark, str(tmp_path), format="json", schema="a BIGINT", on_error="skip"
    )
    assert df.count() == 2


def test_filters_on_dir_columns_skip_files_before_opening_them(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The 2023 file is fine in its sampled head and bad past it: only opening it fails."""
    write_json(tmp_path / "2024" / "a.json", [{"n": 1}])
    good_head = "".join(json.dumps({"n": i, "pad": "x" * 100}) + "\n" for i in range(4000))
    (tmp_path / "2023").mkdir()
    (tmp_path / "2023" / "b.json").write_text(good_head + "{broken\n")
    df = connect_plugin.scan(spark, str(tmp_path), format="json", columns=["n", "dir0"])
    with pytest.raises(SparkRuntimeException, match="malformed json"):
        df.collect()
    assert df.where(F.col("dir0") == "2024").collect() == [(1, "2024")]
    assert df.where(F.col("dir0").isin("2024", "2025")).count() == 1


@pytest.fixture
def parquet_files(tmp_path: Path) -> Path:
    pq.write_table(pa.table({"k": [1, 2], "v": ["a", "b"]}), tmp_path / "p.parquet")
    return tmp_path


def test_parquet_scans_keep_file_types(spark: SparkSession, parquet_files: Path) -> None:
    df = connect_plugin.scan(spark, str(parquet_files), format="parquet")
    assert df.dtypes == [("k", "bigint"), ("v", "string")]
    assert df.collect() == [(1, "a"), (2, "b")]


def test_a_temp_table_is_scanned_by_name(spark: SparkSession) -> None:
    spark.sql(
        "CREATE TEMPORARY TABLE scanned USING csv PARTITIONED BY (k) AS "
        "SELECT id, CAST(id AS STRING) AS s, CAST(id % 2 AS INT) AS k FROM range(6)"
    ).collect()
    df = connect_plugin.scan(spark, table="SCANNED")
    assert df.dtypes == [("id", "bigint"), ("s", "string"), ("k", "int")]
    assert sorted(tuple(r) for r in df.collect()) == [(i, str(i), i % 2) for i in range(6)]
    assert df.where(F.col("k") == 1).count() == 3
    assert connect_plugin.scan(spark, table="scanned", columns=["S", "filename"]).columns == [
        "S",
        "filename",
    ]


def test_tables_and_schemas_with_timestamps_are_scanned(
    spark: SparkSession, unique_name: str, tmp_path: Path
) -> None:
    """A TIMESTAMP column in a temp table, a catalog table or a provided schema: the scan
    reads the instants Spark's own read gives (the gateway's pyspark needs a zone for it)."""
    values = (
        "SELECT id, TIMESTAMP'1969-12-31 23:59:59.999999' + make_interval(0, 0, 0, id) AS ts, "
        "TIMESTAMP'2024-03-01 12:00:00' AS at FROM range(3)"
    )
    spark.sql(f"CREATE TEMPORARY TABLE stamped USING parquet PARTITIONED BY (at) AS {values}")
    spark.sql(f"CREATE TABLE {unique_name} USING json AS {values}")
    try:
        for name in ("stamped", unique_name):
            df = connect_plugin.scan(spark, table=name)
            assert df.dtypes == [("id", "bigint"), ("ts", "timestamp"), ("at", "timestamp")]
            expected = sorted(tuple(r) for r in spark.table(name).collect())
            assert sorted(tuple(r) for r in df.collect()) == expected, name
    finally:
        spark.sql(f"DROP TABLE {unique_name}")
    write_json(tmp_path / "a.json", [{"ts": "1970-01-01T00:00:00.000001Z"}])
    provided = connect_plugin.scan(spark, str(tmp_path), format="json", schema="ts TIMESTAMP")
    assert [r.ts for r in provided.selectExpr("unix_micros(ts) AS ts").collect()] == [1]


def test_a_permanent_table_is_scanned_when_no_temp_table_has_the_name(
    spark: SparkSession, unique_name: str
) -> None:
    spark.range(4).selectExpr("id", "id * 2 AS twice").write.format("json").saveAsTable(unique_name)
    try:
        df = connect_plugin.scan(spark, table=unique_name)
        assert df.dtypes == [("id", "bigint"), ("twice", "bigint")]
        assert sorted(tuple(r) for r in df.collect()) == [(i, 2 * i) for i in range(4)]
    finally:
        spark.sql(f"DROP TABLE {unique_name}")


def test_a_held_scan_of_a_permanent_table_sees_later_writes_as_sparks_own_read_does(
    spark: SparkSession, unique_name: str
) -> None:
    """Spark lists a catalog table's files on every run of a DataFrame that reads it; a
    scan of the table held since before a write gives the same rows as Spark's read."""
    spark.range(4).selectExpr("id", "id * 2 AS twice").write.format("json").saveAsTable(unique_name)
    try:
        scanned = connect_plugin.scan(spark, table=unique_name)
        sparks = spark.table(unique_name)
        writes = [
            f"INSERT INTO {unique_name} SELECT id, id * 2 FROM range(4, 7)",
            f"INSERT OVERWRITE {unique_name} SELECT id, -id FROM range(2)",
            f"INSERT INTO {unique_name} VALUES (9, 18)",
        ]
        for write in ["", *writes]:
            if write:
                spark.sql(write).collect()
            expected = sorted(tuple(r) for r in sparks.collect())
            assert sorted(tuple(r) for r in scanned.collect()) == expected, write
            assert scanned.count() == len(expected), write
        assert expected == [(0, 0), (1, -1), (9, 18)]
    finally:
        spark.sql(f"DROP TABLE {unique_name}")


def test_scan_errors_name_what_is_wrong(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(AnalysisException, match=f"path '{tmp_path / 'nothing'}' does not exist"):
        connect_plugin.scan(spark, str(tmp_path / "nothing"), format="json").collect()
    with pytest.raises(AnalysisException, match="no temporary table of this session and no"):
        connect_plugin.scan(spark, table="no_such_table_anywhere").collect()
    with pytest.raises(AnalysisException, match="not valid DDL"):
        connect_plugin.scan(spark, str(tmp_path), format="json", schema="a BIGINT,,").collect()
    with pytest.raises(AnalysisException, match="option 'bogus' is not an option"):
        connect_plugin.scan(spark, str(tmp_path), format="csv", options={"bogus": "1"}).collect()
    with pytest.raises(ValueError, match="either paths or table"):
        connect_plugin.scan(spark, str(tmp_path), table="t")
    with pytest.raises(ValueError, match="on_error must be one of"):
        connect_plugin.scan(spark, str(tmp_path), format="json", on_error="ignore")


def test_a_scan_reads_only_through_its_own_session(
    spark: SparkSession, direct: SparkSession, drifting: Path
) -> None:
    """Straight to Spark, without the gateway, the plugin relation is refused by Spark."""
    with pytest.raises(SparkConnectGrpcException):
        connect_plugin.scan(direct, str(drifting), format="json").collect()


def test_a_misspelt_column_is_nulls_or_with_missing_columns_error_an_error(
    spark: SparkSession, tmp_path: Path
) -> None:
    write_json(tmp_path / "a.json", [{"id": 1, "amount": 2.5}])
    nulls = connect_plugin.scan(spark, str(tmp_path), format="json", columns=["id", "amuont"])
    assert rows(nulls) == [{"id": 1, "amuont": None}]
    strict = connect_plugin.scan(
        spark, str(tmp_path), format="json", columns=["id", "amuont"], missing_columns="error"
    )
    with pytest.raises(AnalysisException, match=r"'amuont'.*the columns are: id, amount"):
        strict.collect()
    with pytest.raises(AnalysisException, match=r"'amuont'.*the columns are: id, amount"):
        spark.sql(
            f"CREATE TEMPORARY VIEW misspelt USING scan OPTIONS (path '{tmp_path}', "
            "format 'json', columns 'id, amuont', missing_columns 'error')"
        )
    with pytest.raises(ValueError, match="missing_columns must be one of null, error"):
        connect_plugin.scan(spark, str(tmp_path), format="json", missing_columns="maybe")
