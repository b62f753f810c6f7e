"""The gateway reads the Filters above a scan into its file filter: what it knows, and only that."""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal

import pytest
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.dataframe import DataFrame
from pyspark.sql.connect.functions import builtin as F
from pyspark.sql.connect.plan import Filter, Limit, LogicalPlan, Project

from connect_plugin import proto
from connect_plugin.errors import InvalidScanSpec
from connect_plugin.scanning.request import predicates
from connect_plugin.scanning.request.predicates import (
    AllOf,
    AnyOf,
    FileFilter,
    NoneOf,
    PartitionFilter,
)
from connect_plugin.server.scans.cached_scans import scan_key, scans_in, track, unrewritten
from connect_plugin.server.scans.scan_pruning import (
    MAX_CHAIN,
    MAX_CONDITION_CHARS,
    push_file_filters,
    read_sql,
)
from connect_plugin.server.transport.plans import plan_nodes
from tests.unit.server.scans.test_scans import Client, Session, request, scan_plan

P = PartitionFilter


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("month = 3", P("eq", "month", 3)),
        ("3 = month", P("eq", "month", 3)),
        ("3 < month", P("gt", "month", 3)),
        ("`month` >= 3", P("ge", "month", 3)),
        ("month <=> NULL", P("eq_null_safe", "month", None)),
        ("month <> 3", NoneOf(P("eq", "month", 3))),
        ("month != 3", NoneOf(P("eq", "month", 3))),
        ("NOT month = 3", NoneOf(P("eq", "month", 3))),
        ("month IN (1, 2)", P("in", "month", (1, 2))),
        ("month BETWEEN 1 AND 2", AllOf((P("ge", "month", 1), P("le", "month", 2)))),
        ("dir0 LIKE 'a%'", P("starts_with", "dir0", "a")),
        ("dir0 IS NULL", P("is_null", "dir0")),
        ("dir0 IS NOT NULL", NoneOf(P("is_null", "dir0"))),
        ("month = 3.50", P("eq", "month", Decimal("3.50"))),
        ("month = -3", P("eq", "month", -3)),
        (
            "(month = 3 OR month = 4) AND dir0 = 'a'",
            AllOf((AnyOf((P("eq", "month", 3), P("eq", "month", 4))), P("eq", "dir0", "a"))),
        ),
        ("month = 3 AND upper(dir0) = 'A'", P("eq", "month", 3)),
        (
            "NOT (month = 3 AND dir0 = 'a')",
            AnyOf((NoneOf(P("eq", "month", 3)), NoneOf(P("eq", "dir0", "a")))),
        ),
        ("NOT (month = 3 OR upper(dir0) = 'A')", NoneOf(P("eq", "month", 3))),
        ("NOT NOT (month = 3 AND upper(dir0) = 'A')", P("eq", "month", 3)),
        ("NOT (month <> 3)", P("eq", "month", 3)),
        ("NOT ((month = 3 AND x > y) OR dir0 = 'a')", NoneOf(P("eq", "dir0", "a"))),
        ("NOT (month <> 3 AND dir0 = 'a')", AnyOf((P("eq", "month", 3), NoneOf(P("eq", "dir0", "a"))))),
    ],
)
def test_sql_conditions_that_are_read(sql: str, expected: FileFilter) -> None:
    assert read_sql(sql) == expected


@pytest.mark.parametrize(
    "sql",
    [
        "month = 3 OR upper(dir0) = 'A'",
        "month = 1e3",
        "month = 3L",
        "month = 3BD",
        'dir0 = "a"',
        "dir0 = 'a\\'b'",
        "dir0 = r'a'",
        "t.month = 3",
        "dir0 = 'x' COLLATE UTF8_LCASE",
        "dir0 = 'a' 'b'",
        "dir0 = 'it''s'",
        "dir0 LIKE 'a_%'",
        "dir0 LIKE 'a%' ESCAPE '!'",
        "month IN (SELECT 1)",
        "month = 3 garbage",
        "month = 3; SELECT 1",
        "month = CAST('3' AS INT)",
        "month = X'03'",
        "month = 0x10",
        "month = TRUE",
        "month = ",
        "NOT (month = 3 AND upper(dir0) = 'A')",
        "NOT (dir0 = 'a' AND is_test)",
    ],
)
def test_sql_conditions_that_are_not_read(sql: str) -> None:
    """Whatever depends on settings, types or functions is unknown: it prunes nothing; nor
    does the NOT of a condition only partly read (its read part alone would be stricter)."""
    assert read_sql(sql) is None


def test_long_sql_is_not_read() -> None:
    long = " OR ".join(f"month = {i}" for i in range(MAX_CONDITION_CHARS // 10))
    assert len(long) > MAX_CONDITION_CHARS
    assert read_sql(long) is None


def file_filter(plan: LogicalPlan) -> tuple[bool, FileFilter | None]:
    """Whether the rewrite changed the request, and the file filter its scan got."""
    built = request(plan)
    changed = push_file_filters(built)
    scans = [r for r in plan_nodes(built, spark_proto.Relation) if r.HasField("extension")]
    assert len(scans) == 1
    message = proto.Scan()
    scans[0].extension.Unpack(message)
    found = predicates.from_json(json.loads(message.file_filter)) if message.file_filter else None
    return changed, found


def test_dataframe_expressions_are_read() -> None:
    condition = (F.col("dir0") == "a") & F.col("month").isin(1, 2) & ~F.col("dir1").isNull()
    changed, found = file_filter(Filter(scan_plan(), condition))
    assert changed
    assert found == AllOf(
        (
            P("eq", "dir0", "a"),
            P("in", "month", (1, 2)),
            NoneOf(P("is_null", "dir1")),
        )
    )


def test_a_not_over_a_dataframe_condition_only_partly_read_prunes_nothing() -> None:
    partly = ~((F.col("dir0") == "a") & F.col("is_test"))
    assert file_filter(Filter(scan_plan(), partly)) == (False, None)
    whole = ~((F.col("dir0") == "a") & (F.col("month") == 3))
    changed, found = file_filter(Filter(scan_plan(), whole))
    assert changed
    assert found == AnyOf((NoneOf(P("eq", "dir0", "a")), NoneOf(P("eq", "month", 3))))


def test_a_chain_of_filters_and_plain_projections_gives_every_condition() -> None:
    inner = Filter(scan_plan(), F.expr("dir0 = 'a'"))
    picked = Project(inner, [F.col("dir0"), F.col("id")])
    _, found = file_filter(Filter(picked, F.col("dir1").startswith("x")))
    assert found == AllOf((P("starts_with", "dir1", "x"), P("eq", "dir0", "a")))


@pytest.mark.parametrize(
    "between",
    [
        lambda child: Project(child, [F.col("id").alias("dir0")]),
        lambda child: Limit(child, 10),
        lambda child: Project(child, [F.col("event.dir0"), F.col("id")]),
        lambda child: Project(child, [F.col("`event`.`dir0`")]),
    ],
    ids=[
        "a projection that names anew",
        "a limit",
        "a nested field named like a folder column",
        "a quoted nested field",
    ],
)
def test_nodes_that_change_rows_or_names_stop_the_chain(between: object) -> None:
    plan = Filter(between(scan_plan()), F.expr("dir0 = 'a'"))  # type: ignore[operator]
    assert file_filter(plan) == (False, None)


def test_columns_of_another_plan_are_not_read() -> None:
    other = DataFrame(scan_plan(), Session())  # type: ignore[arg-type]
    mine = scan_plan()
    own = DataFrame(mine, Session())  # type: ignore[arg-type]
    _, found = file_filter(Filter(mine, (own["dir0"] == "a") & (other["dir1"] == "b")))
    assert found == P("eq", "dir0", "a")


def test_a_clients_own_file_filter_is_replaced() -> None:
    built = request(scan_plan())
    message = proto.Scan()
    built.plan.root.extension.Unpack(message)
    message.file_filter = json.dumps(predicates.to_json(P("eq", "dir0", "x")))
    built.plan.root.extension.Pack(message)
    assert push_file_filters(built)
    built.plan.root.extension.Unpack(message)
    assert message.file_filter == ""
    assert not push_file_filters(built)


def test_file_filters_travel_as_json() -> None:
    found = AllOf(
        (
            P("in", "month", (1, Decimal("2.50"), None)),
            NoneOf(P("eq", "dir0", "a", negated=True)),
            AnyOf((P("lt", "x", 1.5), P("is_null", "y"))),
        )
    )
    assert predicates.from_json(json.loads(json.dumps(predicates.to_json(found)))) == found
    for bad in ({"op": "eq"}, {"op": "nope", "column": "a"}, [1], {"op": "in", "column": "a"}):
        with pytest.raises(InvalidScanSpec, match="file filter"):
            predicates.from_json(bad)


def test_requests_without_filters_are_left_alone() -> None:
    built = request(scan_plan())
    before = built.SerializeToString()
    assert not push_file_filters(built)
    assert built.SerializeToString() == before


def test_a_scan_of_a_cached_plan_keeps_its_whole_read() -> None:
    """Its key ignores what the rewrites add, and neither rewrite touches it."""
    plan = Filter(scan_plan(), F.expr("dir0 = 'a'"))
    built = request(plan)
    scan = next(scans_in(built))
    cached = Counter([scan_key(scan)])
    assert not push_file_filters(built, cached)
    assert push_file_filters(built)
    assert scan_key(next(scans_in(built))) in cached


def test_persisting_counts_only_the_scans_a_plan_holds_whole() -> None:
    cached: Counter[bytes] = Counter()
    whole = scan_plan()
    for plan in (whole, Filter(scan_plan(), F.expr("dir0 = 'a'"))):
        persist = spark_proto.AnalyzePlanRequest()
        persist.persist.relation.CopyFrom(plan.plan(Client()))  # type: ignore[arg-type]
        push_file_filters(persist)
        track(persist, unrewritten(persist), cached)
    assert sum(cached.values()) == 1
    unpersist = spark_proto.AnalyzePlanRequest()
    unpersist.unpersist.relation.CopyFrom(whole.plan(Client()))  # type: ignore[arg-type]
    track(unpersist, unrewritten(unpersist), cached)
    assert not cached


def test_a_long_chain_is_read_no_further_than_max_chain_from_its_scan() -> None:
    plan: LogicalPlan = scan_plan()
    for index in range(MAX_CHAIN + 10):
        plan = Filter(plan, F.col(f"dir{index}").isNull())
    _, found = file_filter(plan)
    assert isinstance(found, AllOf)
    assert len(found.parts) == MAX_CHAIN
    assert found.parts[-1] == P("is_null", "dir0")
