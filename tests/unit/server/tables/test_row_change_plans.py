"""What a row change asks Spark to count while it rewrites a table."""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path

import pytest
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.types import proto_schema_to_pyspark_data_type
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from connect_plugin.server.model.statements import (
    Assignment,
    ChangeRows,
    DeleteFrom,
    MergeClause,
    MergeInto,
    Name,
    TruncateTable,
    UpdateTable,
)
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.tables.row_change_plans import (
    DELETE,
    INSERT,
    MATCHED,
    NOT_MATCHED,
    UPDATE,
    WRITTEN,
    Plan,
)

SCHEMA = StructType([StructField("id", IntegerType()), StructField("s", StringType())])
T = Name(("t",))


def _table(rows: int | None) -> TempTable:
    return TempTable(
        name="t",
        location=Path("/workspace/session/table"),
        format="parquet",
        schema_json=SCHEMA.json(),
        partition_columns=(),
        options={},
        rows=rows,
        created=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
    )


def _observations(relation: spark_proto.Relation) -> list[spark_proto.CollectMetrics]:
    found = []
    node = relation
    while node.WhichOneof("rel_type") is not None:
        kind = node.WhichOneof("rel_type")
        held = getattr(node, kind)
        if kind == "collect_metrics":
            found.append(held)
        if "input" not in held.DESCRIPTOR.fields_by_name:
            break
        node = held.input
    return found


@pytest.mark.parametrize(
    "request_",
    [DeleteFrom(T, condition="id > 1"), DeleteFrom(T), TruncateTable(T)],
    ids=["delete where", "delete all", "truncate"],
)
def test_a_delete_of_a_counted_table_observes_nothing(request_: ChangeRows) -> None:
    plan = Plan.of(request_, _table(rows=10))
    assert plan.deletes_only
    assert _observations(plan.relation("changes")) == []


def test_a_delete_of_a_table_whose_rows_are_not_counted_counts_its_changes() -> None:
    plan = Plan.of(DeleteFrom(T, condition="id > 1"), _table(rows=None))
    assert not plan.deletes_only
    (observed,) = _observations(plan.relation("changes"))
    assert observed.name == "changes"
    expressions = [m.expression_string.expression for m in observed.metrics]
    assert [e.rsplit(" AS ", 1)[1] for e in expressions] == ["update", "delete", "insert", "written"]


def test_an_update_counts_its_changes_with_count_of_a_case() -> None:
    update = UpdateTable(T, assignments=(Assignment(Name(("s",)), "'x'"),), condition="id > 1")
    plan = Plan.of(update, _table(rows=10))
    assert not plan.deletes_only
    (observed,) = _observations(plan.relation("changes"))
    expressions = [m.expression_string.expression for m in observed.metrics]
    assert all(e.startswith("count(CASE WHEN ") for e in expressions[:WRITTEN]), expressions
    assert expressions[WRITTEN] == "count(1) AS written"


@pytest.mark.parametrize(
    ("request_", "between"),
    [
        (UpdateTable(T, assignments=(Assignment(Name(("s",)), "'x'"),), condition="id > 1"), []),
        (DeleteFrom(T, condition="id > 1"), ["filter"]),
    ],
    ids=["update", "delete"],
)
def test_only_the_choice_of_the_table_columns_follows_the_observation(
    request_: ChangeRows, between: list[str]
) -> None:
    relation = Plan.of(request_, _table(rows=None)).relation("changes")
    assert list(relation.project.expressions) == [
        spark_proto.Expression(expression_string=spark_proto.Expression.ExpressionString(expression=c))
        for c in ("`id`", "`s`")
    ]
    node = relation.project.input
    kinds = []
    while node.WhichOneof("rel_type") != "collect_metrics":
        kinds.append(node.WhichOneof("rel_type"))
        node = getattr(node, kinds[-1]).input
    assert kinds == between


def _merge(on: str, *, source_alias: str = "s") -> MergeInto:
    clauses = (
        MergeClause(MATCHED, UPDATE, None, (Assignment(Name(("s",)), "s.s"),)),
        MergeClause(NOT_MATCHED, INSERT, None, star=True),
    )
    return MergeInto(T, "t", source="src", source_alias=source_alias, on=on, clauses=clauses)


@pytest.mark.parametrize(
    ("on", "source_alias", "marked"),
    [
        ("t.id = s.id", "s", False),
        ("s.id = t.id AND s.s = 'x'", "s", False),
        ("t.id <=> s.id", "s", True),
        ("t.id = s.id OR s.s IS NULL", "s", True),
        ("t.id = s.id", "T", True),
    ],
    ids=["compared", "compared in a conjunction", "null-safe", "or", "source named like the table"],
)
def test_a_merge_marks_the_tables_rows_only_where_its_condition_compares_none_of_their_columns(
    on: str, source_alias: str, marked: bool
) -> None:
    plan = Plan.of(_merge(on, source_alias=source_alias), _table(rows=10))
    assert ("TRUE AS __connect_plugin_target_row" in plan.target[0]) is marked
    assert plan.cardinality is not None
    if not marked:
        assert plan.target[0] == "SELECT * FROM `t`"
        assert "`s`.__connect_plugin_source_row IS NULL OR `t`.`id` IS NOT NULL" in " ".join(
            plan.select
        )


def test_a_merge_that_may_match_a_row_twice_numbers_the_tables_rows_whatever_its_condition() -> (
    None
):
    """Its repeated matches are found by the table rows' numbers, not counted."""
    matched_delete = MergeInto(
        T,
        "t",
        source="src",
        source_alias="s",
        on="t.id = s.id",
        clauses=(MergeClause(MATCHED, DELETE, None),),
    )
    plan = Plan.of(matched_delete, _table(rows=10))
    assert "monotonically_increasing_id()" in plan.target[0]
    assert plan.cardinality is None


def test_values_typed_without_nulls_are_cast_to_nullable_types_whatever_the_table_stored() -> None:
    """A table stored by a gateway that kept ``array(id)``'s non-null elements is rewritten
    with nullable ones: Spark reads the table nullable, and a cast to the stored type
    failed every statement with NOT_NULL_CONSTRAINT_VIOLATION."""
    stored = StructType(
        [
            StructField("id", LongType(), False),
            StructField("a", ArrayType(LongType(), False)),
            StructField("s", StructType([StructField("x", LongType(), False)])),
            StructField("m", MapType(LongType(), LongType(), False)),
        ]
    )
    table = dataclasses.replace(_table(rows=3), schema_json=stored.json())
    update = UpdateTable(T, assignments=(Assignment(Name(("a",)), "array(7)"),))
    node = Plan.of(update, table).relation("changes")
    while node.WhichOneof("rel_type") != "to_schema":
        node = getattr(node, node.WhichOneof("rel_type")).input
    cast = proto_schema_to_pyspark_data_type(node.to_schema.schema)
    assert isinstance(cast, StructType)
    nullable = StructType(
        [
            StructField("id", LongType()),
            StructField("a", ArrayType(LongType())),
            StructField("s", StructType([StructField("x", LongType())])),
            StructField("m", MapType(LongType(), LongType())),
        ]
    )
    assert cast.fields[:4] == nullable.fields
    assert cast[cast.names[-1]].dataType == ArrayType(LongType())
