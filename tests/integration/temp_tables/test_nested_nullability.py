"""Arrays, maps and structs whose CTAS query typed them without NULLs take every statement.

``array(id, id + 1)`` has elements that cannot be NULL and ``named_struct('x',
id)`` a field that cannot be NULL; Spark's own ``CREATE TABLE ... USING
parquet AS SELECT`` stores such types nullable and takes NULL in them later,
and DuckDB has no NOT NULL inside a value at all. A temp table does the same:
every statement works on such columns, NULL elements, fields and map values
included, while a column declared NOT NULL still refuses NULL with the
gateway's own error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from tests.integration.support import table_folders, temp_table_names

CREATE = (
    "CREATE TEMPORARY TABLE t USING {fmt} AS SELECT id, array(id, id + 1) AS a, "
    "named_struct('x', id) AS s FROM range(3)"
)
FORMATS = ["parquet", "orc", "json"]


def _rows(spark: SparkSession, name: str = "t") -> list[tuple[object, ...]]:
    found = []
    for row in spark.table(name).collect():
        values = row.asDict()
        found.append((values["id"], values["a"], None if values["s"] is None else values["s"]["x"]))
    return sorted(found, key=repr)


@pytest.fixture(params=FORMATS)
def typed(spark: SparkSession, request: pytest.FixtureRequest) -> SparkSession:
    spark.sql(CREATE.format(fmt=request.param))
    return spark


@pytest.mark.parametrize(
    ("statement", "changed"),
    [
        ("UPDATE t SET id = id + 10 WHERE id = 1", {1: (11, [1, 2], 1)}),
        ("UPDATE t SET a = array(7) WHERE id = 1", {1: (1, [7], 1)}),
        ("UPDATE t SET a = array(NULL, 8) WHERE id = 1", {1: (1, [None, 8], 1)}),
        ("UPDATE t SET s = named_struct('x', 9) WHERE id = 1", {1: (1, [1, 2], 9)}),
        (
            "UPDATE t SET s = named_struct('x', CAST(NULL AS BIGINT)) WHERE id = 1",
            {1: (1, [1, 2], None)},
        ),
        ("UPDATE t SET a = NULL, s = NULL WHERE id = 1", {1: (1, None, None)}),
    ],
)
def test_update_sets_and_keeps_values_of_types_typed_without_nulls(
    typed: SparkSession, statement: str, changed: dict[int, tuple[object, ...]]
) -> None:
    before = {row[0]: row for row in _rows(typed)}
    assert [tuple(r) for r in typed.sql(statement).collect()] == [(1,)]
    assert _rows(typed) == sorted({**before, **changed}.values(), key=repr)


def test_delete_keeps_the_other_rows(typed: SparkSession) -> None:
    assert [tuple(r) for r in typed.sql("DELETE FROM t WHERE id = 1").collect()] == [(1,)]
    assert _rows(typed) == [(0, [0, 1], 0), (2, [2, 3], 2)]


def test_merge_updates_deletes_and_inserts_nulls_inside_values(typed: SparkSession) -> None:
    merged = typed.sql(
        "MERGE INTO t USING (SELECT id, array(NULL) AS a, named_struct('x', NULL) AS s "
        "FROM range(1, 5)) AS src ON t.id = src.id "
        "WHEN MATCHED AND t.id = 1 THEN UPDATE SET a = src.a, s = src.s "
        "WHEN MATCHED AND t.id = 2 THEN DELETE "
        "WHEN NOT MATCHED THEN INSERT *"
    ).collect()
    assert [tuple(r) for r in merged] == [(4, 1, 1, 2)]
    assert _rows(typed) == [
        (0, [0, 1], 0),
        (1, [None], None),
        (3, [None], None),
        (4, [None], None),
    ]


def test_insert_takes_nulls_inside_values_and_later_changes_keep_them(
    typed: SparkSession,
) -> None:
    typed.sql("INSERT INTO t VALUES (5, array(NULL), named_struct('x', NULL))")
    typed.sql("INSERT INTO t SELECT 6, array(6, NULL), NULL")
    typed.sql("UPDATE t SET id = id * 10 WHERE id >= 5")
    assert _rows(typed)[-2:] == [(50, [None], None), (60, [6, None], None)]
    assert [tuple(r) for r in typed.sql("DELETE FROM t WHERE id < 50").collect()] == [(3,)]
    assert _rows(typed) == [(50, [None], None), (60, [6, None], None)]


def test_map_values_typed_without_nulls_take_null(spark: SparkSession) -> None:
    spark.sql("CREATE TEMPORARY TABLE t AS SELECT id, map(id, id) AS m FROM range(2)")
    spark.sql("INSERT INTO t VALUES (2, map(2, NULL))")
    spark.sql("UPDATE t SET m = map(1, NULL) WHERE id = 1")
    spark.sql(
        "MERGE INTO t USING (SELECT 3 AS id, map(3, NULL) AS m) src ON t.id = src.id "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    spark.sql("DELETE FROM t WHERE id = 0")
    rows = sorted(tuple(r) for r in spark.table("t").collect())
    assert rows == [(1, {1: None}), (2, {2: None}), (3, {3: None})]


def test_a_not_null_column_beside_such_values_still_refuses_null(
    spark: SparkSession, workspace: Path
) -> None:
    spark.sql("CREATE TEMPORARY TABLE n (id BIGINT NOT NULL, a ARRAY<BIGINT>, s STRUCT<x: BIGINT>)")
    spark.sql("INSERT INTO n SELECT id, array(id), named_struct('x', id) FROM range(2)")
    spark.sql("UPDATE n SET a = array(NULL), s = named_struct('x', NULL) WHERE id = 1")
    with pytest.raises(PySparkException) as caught:
        spark.sql("UPDATE n SET id = NULL WHERE id = 0")
    assert caught.value.getCondition() == "CONNECT_PLUGIN.TEMP_TABLE_NOT_NULL"
    assert "Temporary table [n]: column [id] is declared NOT NULL" in str(caught.value)
    rows = sorted((r["id"], r["a"], r["s"]["x"]) for r in spark.table("n").collect())
    assert rows == [(0, [0], 0), (1, [None], None)]
    assert len(table_folders(workspace, spark)) == 1


@pytest.mark.parametrize(
    "declared",
    [
        "s STRUCT<x: INT NOT NULL>",
        "a ARRAY<STRUCT<x: INT NOT NULL>>",
        "m MAP<INT, STRUCT<x: INT NOT NULL>>",
    ],
)
def test_not_null_inside_a_declared_value_is_refused_and_nothing_is_made(
    spark: SparkSession, workspace: Path, declared: str
) -> None:
    with pytest.raises(PySparkException, match=r"Temporary table \[d\] was not created: column"):
        spark.sql(f"CREATE TEMPORARY TABLE d (id INT, {declared})")
    assert temp_table_names(spark) == []
    assert table_folders(workspace, spark) == []
