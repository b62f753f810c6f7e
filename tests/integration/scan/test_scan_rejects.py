"""The rejects table end to end: ``on_error="reject"`` through the gateway.

The stock pyspark client talks to the gateway in front of a real Spark
Connect server; the files are many, so Spark's Python workers read them in
several partitions at once, each writing its files' rejects.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.errors import AnalysisException, SparkRuntimeException
from pyspark.sql import DataFrame, SparkSession

import connect_plugin
from connect_plugin.server.gateway import Gateway
from tests.integration.support import (
    Upstream,
    assert_private,
    new_session,
    session_folder,
    temp_table_names,
)
from tests.object_store import ObjectStore

FILES = 12

DirtyBucket = tuple[str, dict[tuple[str, int], str]]
"""A bucket's ``s3://`` URL and each bad record's (URL, line) and error type."""

COLUMNS = [
    "file", "line", "byte_offset", "column_name", "error_type", "error_message", "raw_record",
]  # fmt: skip


def dirty_json(folder: Path) -> dict[tuple[str, int], str]:
    """Files of four lines: two good, one with a value that is no number, one broken record.

    Returns each bad record's (file name, line) and its error type.
    """
    folder.mkdir()
    bad = {}
    for n in range(FILES):
        lines = [
            json.dumps({"id": n * 10 + 1, "name": "a"}),
            json.dumps({"id": "not a number", "name": "b"}),
            json.dumps({"id": n * 10 + 3, "name": "c"}),
            '{"id": 4, "name": ',
        ]
        (folder / f"part-{n:02}.json").write_text("\n".join(lines) + "\n")
        bad[(f"part-{n:02}.json", 2)] = "CAST"
        bad[(f"part-{n:02}.json", 4)] = "MALFORMED RECORD"
    return bad


def dirty_csv(folder: Path) -> dict[tuple[str, int], str]:
    """Files of a header and three rows, the second of which has a price that is no number."""
    folder.mkdir()
    for n in range(FILES):
        (folder / f"part-{n:02}.csv").write_text(f"id,price\n{n},1.5\n{n},cheap\n{n},2.5\n")
    return {(f"part-{n:02}.csv", 3): "CAST" for n in range(FILES)}


def rejects_of(spark: SparkSession, table: str = "reject_errors") -> list[dict[str, Any]]:
    rows = spark.sql(f"SELECT * FROM {table}").collect()
    return [row.asDict() for row in rows]


def placed(rejects: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    return {(Path(r["file"]).name, r["line"]): r["error_type"] for r in rejects}


def test_json_cast_errors_and_malformed_records_go_to_the_rejects_table(
    spark: SparkSession, tmp_path: Path
) -> None:
    bad = dirty_json(tmp_path / "json")
    df = connect_plugin.scan(
        spark, str(tmp_path / "json"), format="json", schema="id BIGINT, name STRING",
        on_error="reject",
    )  # fmt: skip
    ids = sorted(row["id"] for row in df.collect())
    assert ids == sorted(n * 10 + k for n in range(FILES) for k in (1, 3))
    rejects = rejects_of(spark)
    assert list(rejects[0]) == COLUMNS
    assert placed(rejects) == bad
    cast = next(r for r in rejects if r["error_type"] == "CAST")
    assert cast["column_name"] == "id"
    assert cast["raw_record"] == '{"id": "not a number", "name": "b"}'
    assert "column 'id'" in cast["error_message"]
    assert Path(cast["file"]).parent == tmp_path / "json"
    malformed = next(r for r in rejects if r["error_type"] == "MALFORMED RECORD")
    assert malformed["column_name"] is None
    assert malformed["raw_record"] == '{"id": 4, "name": '
    assert "malformed json" in malformed["error_message"]


def test_the_same_scan_run_again_does_not_repeat_its_rejects(
    spark: SparkSession, tmp_path: Path
) -> None:
    dirty_json(tmp_path / "json")
    df = connect_plugin.scan(
        spark, str(tmp_path / "json"), format="json", schema="id BIGINT, name STRING",
        on_error="reject", rejects_table="again",
    )  # fmt: skip
    df.collect()
    assert len(df.collect()) == 2 * FILES
    assert len(rejects_of(spark, "again")) == 2 * FILES
    assert df.count() == 2 * FILES
    assert len(rejects_of(spark, "again")) == 2 * FILES


def test_csv_rejects_in_a_named_table_filtered_or_not(spark: SparkSession, tmp_path: Path) -> None:
    folder = tmp_path / "csv"
    dirty_csv(folder)
    df = connect_plugin.scan(
        spark, str(folder), format="csv", schema="id INT, price DOUBLE",
        on_error="reject", rejects_table="bad_rows", options={"header": "true"},
    )  # fmt: skip
    assert df.count() == 2 * FILES
    assert df.filter("price > 2").count() == FILES
    rejects = rejects_of(spark, "bad_rows")
    assert {(Path(r["file"]).name, r["line"]) for r in rejects} == {
        (f"part-{n:02}.csv", 3) for n in range(FILES)
    }
    assert {(r["column_name"], r["error_type"]) for r in rejects} == {("price", "CAST")}
    assert {r["raw_record"] for r in rejects} == {f"{n},cheap" for n in range(FILES)}


def test_the_rejects_table_is_a_temp_table_replaced_by_a_later_scan(
    spark: SparkSession, tmp_path: Path
) -> None:
    dirty_json(tmp_path / "json")
    first = connect_plugin.scan(
        spark, str(tmp_path / "json"), format="json", schema="id BIGINT, name STRING",
        on_error="reject", rejects_table="replaced",
    )  # fmt: skip
    first.collect()
    assert "replaced" in temp_table_names(spark)
    assert len(rejects_of(spark, "replaced")) == 2 * FILES
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "a.json").write_text('{"id": 1}\n{"id": "two"}\n')
    second = connect_plugin.scan(
        spark, str(clean), format="json", schema="id BIGINT", on_error="reject",
        rejects_table="replaced",
    )  # fmt: skip
    assert [row["id"] for row in second.collect()] == [1]
    assert [(Path(r["file"]).name, r["line"]) for r in rejects_of(spark, "replaced")] == [
        ("a.json", 2)
    ]
    assert temp_table_names(spark).count("replaced") == 1


def test_a_users_own_temp_table_is_never_replaced(spark: SparkSession, tmp_path: Path) -> None:
    spark.sql("CREATE TEMPORARY TABLE mine AS SELECT 1 AS x")
    (tmp_path / "a.json").write_text('{"id": "x"}\n')
    df = connect_plugin.scan(
        spark, str(tmp_path), format="json", schema="id BIGINT", on_error="reject",
        rejects_table="mine",
    )  # fmt: skip
    with pytest.raises(Exception, match=r"rejects_table \[mine\] is a temporary table"):
        df.collect()
    assert [tuple(r) for r in spark.sql("SELECT * FROM mine").collect()] == [(1,)]


def test_rejects_table_without_reject_is_an_error(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"id": 1}\n')
    df = connect_plugin.scan(
        spark, str(tmp_path), format="json", on_error="skip", rejects_table="bad_rows"
    )
    with pytest.raises(Exception, match="rejects_table='bad_rows' needs on_error='reject'"):
        df.collect()


def test_the_rejects_table_dies_with_its_session(
    gateway: Gateway, workspace: Path, tmp_path: Path
) -> None:
    dirty_json(tmp_path / "json")
    session = new_session(gateway.address)
    folder = session_folder(workspace, session)
    connect_plugin.scan(
        session, str(tmp_path / "json"), format="json", schema="id BIGINT, name STRING",
        on_error="reject",
    ).collect()  # fmt: skip
    assert temp_table_names(session) == ["reject_errors"]
    assert assert_private(folder) > FILES
    session.stop()
    deadline = time.monotonic() + 10
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not folder.exists()
    other = new_session(gateway.address)
    try:
        with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
            other.sql("SELECT * FROM reject_errors").collect()
    finally:
        other.stop()


def test_a_sql_scan_view_rejects_into_its_table_shown_after_a_refresh(
    spark: SparkSession, tmp_path: Path
) -> None:
    bad = dirty_json(tmp_path / "json")
    spark.sql(
        f"CREATE TEMPORARY VIEW logs USING scan OPTIONS (path '{tmp_path / 'json'}', "
        "format 'json', schema 'id BIGINT, name STRING', on_error 'reject', "
        "rejects_table 'sql_rejects')"
    )
    assert rejects_of(spark, "sql_rejects") == []
    assert spark.sql("SELECT count(*) AS n FROM logs").collect()[0]["n"] == 2 * FILES
    spark.sql("REFRESH TABLE sql_rejects")
    assert placed(rejects_of(spark, "sql_rejects")) == bad
    assert "sql_rejects" in temp_table_names(spark)
    spark.sql("DROP VIEW logs")


@pytest.fixture
def dirty_bucket(object_store: ObjectStore, tmp_path: Path) -> DirtyBucket:
    """A bucket with the dirty json files under ``json/`` and the dirty csv files under ``csv/``."""
    bucket = object_store.new_bucket()
    bad: dict[tuple[str, int], str] = {}
    for kind, write in (("json", dirty_json), ("csv", dirty_csv)):
        for (name, line), error in write(tmp_path / kind).items():
            bad[(f"s3://{bucket}/{kind}/{name}", line)] = error
        for path in (tmp_path / kind).iterdir():
            object_store.put(f"{bucket}/{kind}/{path.name}", path.read_bytes())
    return f"s3://{bucket}", bad


def under(bad: dict[tuple[str, int], str], prefix: str) -> dict[tuple[str, int], str]:
    return {key: error for key, error in bad.items() if key[0].startswith(prefix)}


def test_an_object_store_scan_rejects_records_under_their_urls(
    spark: SparkSession,
    object_store: ObjectStore,
    dirty_bucket: DirtyBucket,
) -> None:
    root, bad = dirty_bucket
    json_scan = connect_plugin.scan(
        spark, f"{root}/json", format="json", schema="id BIGINT, name STRING",
        on_error="reject", rejects_table="s3_json", options=object_store.options,
    )  # fmt: skip
    assert len(json_scan.collect()) == 2 * FILES
    rejects = rejects_of(spark, "s3_json")
    assert {(r["file"], r["line"]): r["error_type"] for r in rejects} == under(bad, f"{root}/json/")
    assert {r["raw_record"] for r in rejects if r["error_type"] == "CAST"} == {
        '{"id": "not a number", "name": "b"}'
    }
    csv_scan = connect_plugin.scan(
        spark, f"{root}/csv", format="csv", schema="id INT, price DOUBLE", on_error="reject",
        rejects_table="s3_csv", options={"header": "true", **object_store.options},
    )  # fmt: skip
    assert csv_scan.filter("price > 2").count() == FILES
    rejects = rejects_of(spark, "s3_csv")
    assert {(r["file"], r["line"]): r["error_type"] for r in rejects} == under(bad, f"{root}/csv/")
    assert {r["column_name"] for r in rejects} == {"price"}


def test_a_sql_scan_view_of_an_object_store_rejects_into_its_table(
    spark: SparkSession,
    object_store: ObjectStore,
    dirty_bucket: DirtyBucket,
    upstream: Upstream,
) -> None:
    root, bad = dirty_bucket
    store = ", ".join(f"{key} '{value}'" for key, value in object_store.options.items())
    spark.sql(
        f"CREATE TEMPORARY VIEW s3_logs USING scan OPTIONS (path '{root}/csv', format 'csv', "
        f"header 'true', schema 'id INT, price DOUBLE', on_error 'reject', "
        f"rejects_table 's3_sql_rejects', {store})"
    )
    assert spark.sql("SELECT sum(price) AS total FROM s3_logs").collect()[0]["total"] == 4 * FILES
    spark.sql("REFRESH TABLE s3_sql_rejects")
    rejects = rejects_of(spark, "s3_sql_rejects")
    assert {(r["file"], r["line"]): r["error_type"] for r in rejects} == under(bad, f"{root}/csv/")
    assert {r["raw_record"] for r in rejects} == {f"{n},cheap" for n in range(FILES)}
    plan = spark.sql("EXPLAIN EXTENDED SELECT * FROM s3_logs").collect()[0][0]
    assert "BatchScan connect_plugin_scan" in plan
    for secret in (object_store.secret_key, object_store.access_key):
        assert secret not in plan
        if upstream.log_path is not None:
            assert secret not in upstream.log_path.read_text()
    spark.sql("DROP VIEW s3_logs")


def dirty_folders(root: Path) -> dict[tuple[str, int], str]:
    """``a/`` and ``b/``, each holding the dirty json files (``dir0`` tells them apart)."""
    root.mkdir()
    bad: dict[tuple[str, int], str] = {}
    for part in ("a", "b"):
        for (name, line), error in dirty_json(root / part).items():
            bad[(f"{part}/{name}", line)] = error
    return bad


def placed_under(root: Path, rejects: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """Each reject's (file relative to ``root``, line), as many times as the table holds it."""
    return sorted((str(Path(r["file"]).relative_to(root)), r["line"]) for r in rejects)


def test_a_reject_scan_used_twice_in_one_query_rejects_each_record_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Both sides of a union or a join read the same files, one side filtered (and so
    pruned differently): each bad record is in the table once, and the query answers as
    the same query under ``skip`` does (issue 44)."""
    root = tmp_path / "json"
    bad = dirty_folders(root)
    everything = sorted(bad)

    def scanned(on_error: str) -> DataFrame:
        return connect_plugin.scan(
            spark, str(root), format="json", schema="id BIGINT, name STRING",
            on_error=on_error, rejects_table="twice" if on_error == "reject" else None,
        )  # fmt: skip

    queries: list[tuple[str, Callable[[DataFrame], Any]]] = [
        ("union", lambda df: sorted(df.union(df).collect())),
        ("union filtered", lambda df: sorted(df.union(df.where("id > 1")).collect())),
        (
            "two filters counted",
            lambda df: df.where("id = 1").union(df.where("id = 11")).count(),
        ),
        ("join", lambda df: sorted(df.join(df.where("id > 1"), "id").collect())),
        (
            "pruned apart",
            lambda df: sorted(df.where("dir0 = 'a'").union(df.where("dir0 = 'b'")).collect()),
        ),
    ]
    rejecting, skipping = scanned("reject"), scanned("skip")
    for name, query in queries:
        assert query(rejecting) == query(skipping), name
        assert placed_under(root, rejects_of(spark, "twice")) == everything, name


def test_two_scans_naming_one_rejects_table_in_one_query_keep_both_scans_rejects(
    spark: SparkSession, tmp_path: Path
) -> None:
    """As DuckDB's scans naming one ``rejects_table`` do; neither replaces the other."""
    bad = dirty_json(tmp_path / "json")
    csv_bad = dirty_csv(tmp_path / "csv")
    from_json = connect_plugin.scan(
        spark, str(tmp_path / "json"), format="json", schema="id BIGINT, name STRING",
        on_error="reject", rejects_table="shared",
    )  # fmt: skip
    from_csv = connect_plugin.scan(
        spark, str(tmp_path / "csv"), format="csv", schema="id BIGINT, price DOUBLE",
        on_error="reject", rejects_table="shared", options={"header": "true"},
    )  # fmt: skip
    both = from_json.select("id").union(from_csv.select("id"))
    assert both.count() == 2 * FILES + 2 * FILES
    expected = sorted({**bad, **csv_bad}.items())
    assert sorted(placed(rejects_of(spark, "shared")).items()) == expected
    assert len(rejects_of(spark, "shared")) == len(expected)
    assert from_json.count() == 2 * FILES
    assert sorted(placed(rejects_of(spark, "shared")).items()) == sorted(bad.items())


def test_a_view_whose_rejects_table_was_dropped_fails_naming_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    dirty_json(tmp_path / "json")
    spark.sql(
        f"CREATE TEMPORARY VIEW orphaned USING scan OPTIONS (path '{tmp_path / 'json'}', "
        "format 'json', schema 'id BIGINT, name STRING', on_error 'reject', "
        "rejects_table 'gone_rejects')"
    )
    spark.sql("DROP TABLE gone_rejects")
    try:
        with pytest.raises(SparkRuntimeException) as caught:
            spark.sql("SELECT * FROM orphaned").collect()
        assert caught.value.getCondition() == "CONNECT_PLUGIN.SCAN"
        assert str(caught.value).splitlines()[0].startswith(
            "[CONNECT_PLUGIN.SCAN] the rejects table [gone_rejects] of this scan no longer exists"
        )
    finally:
        spark.sql("DROP VIEW orphaned")


SHAPES = ("collect", "union_filtered", "join_filtered", "count_filters", "pruned", "pruned_union",
          "count", "limit")  # fmt: skip
"""Queries on a reject scan: the scan once or twice, filtered or pruned, counted or cut."""


@st.composite
def dirty_layouts(draw: st.DrawFn) -> dict[str, list[list[str]]]:
    """Folders ``a`` and ``b``, each of one to three json files whose records are good
    (``{"id": n}``), of the wrong type (``{"id": "bad"}``) or malformed (``{"id": ``)."""
    kinds = st.sampled_from(["good", "good", "cast", "malformed"])
    return {
        folder: draw(st.lists(st.lists(kinds, min_size=1, max_size=4), min_size=1, max_size=3))
        for folder in ("a", "b")
    }


def written(root: Path, layout: dict[str, list[list[str]]]) -> dict[tuple[str, int], str]:
    """The layout's files under ``root``; each bad record's (file, line) and error type."""
    bad: dict[tuple[str, int], str] = {}
    ids = iter(range(10**6))
    for folder, files in layout.items():
        (root / folder).mkdir(parents=True)
        for index, kinds in enumerate(files):
            name = f"{folder}/{index}.json"
            text = {"good": lambda: json.dumps({"id": next(ids)}), "cast": lambda: '{"id": "bad"}',
                    "malformed": lambda: '{"id": '}  # fmt: skip
            (root / name).write_text("".join(text[kind]() + "\n" for kind in kinds))
            for line, kind in enumerate(kinds, start=1):
                if kind != "good":
                    bad[(name, line)] = "CAST" if kind == "cast" else "MALFORMED RECORD"
    return bad


def shaped(shape: str, df: DataFrame) -> tuple[Any, set[str]]:
    """The answer of ``shape`` on ``df`` (rows sorted, or a count) and the folders it reads."""
    if shape == "collect":
        return sorted(df.collect()), {"a", "b"}
    if shape == "union_filtered":
        return sorted(df.union(df.where("id > 1")).collect()), {"a", "b"}
    if shape == "join_filtered":
        return sorted(df.join(df.where("id > 0"), ["id", "dir0"]).collect()), {"a", "b"}
    if shape == "count_filters":
        return df.where("id = 0").union(df.where("id = 2")).count(), {"a", "b"}
    if shape == "pruned":
        return sorted(df.where("dir0 = 'a'").collect()), {"a"}
    if shape == "pruned_union":
        return sorted(df.where("dir0 = 'a'").union(df.where("dir0 = 'b'")).collect()), {"a", "b"}
    if shape == "count":
        return df.count(), {"a", "b"}
    assert shape == "limit"
    return len(df.limit(2).collect()), set()


def test_random_query_shapes_keep_each_bad_record_once(spark: SparkSession, tmp_path: Path) -> None:
    """Sequences of query shapes on a reject scan answer as under ``skip``; after each the
    rejects table holds each bad record of the files read so far once (a ``limit`` may read
    some files whole, or none)."""
    runs = iter(range(10**6))

    @settings(max_examples=4, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(dirty_layouts(), st.lists(st.sampled_from(SHAPES), min_size=2, max_size=3))
    def sequence(layout: dict[str, list[list[str]]], shapes: list[str]) -> None:
        run = next(runs)
        root = tmp_path / f"run{run}"
        bad = written(root, layout)
        table = f"shapes_{run}"
        scans = {
            policy: connect_plugin.scan(
                spark, str(root), format="json", schema="id BIGINT", on_error=policy,
                rejects_table=table if policy == "reject" else None,
            )
            for policy in ("reject", "skip")
        }  # fmt: skip
        surely: set[str] = set()
        for shape in shapes:
            answer, reads = shaped(shape, scans["reject"])
            assert answer == shaped(shape, scans["skip"])[0] or shape == "limit", shape
            surely |= reads
            kept = [(str(Path(r["file"]).relative_to(root)), r["line"]) for r in rejects_of(spark, table)]
            assert len(kept) == len(set(kept)), f"{shape}: a bad record twice"
            assert set(kept) <= set(bad), shape
            assert {key for key in bad if key[0].split("/")[0] in surely} <= set(kept), shape
        spark.sql(f"DROP TABLE {table}")

    sequence()
