"""The gateway's count rewrite and the client's Scan message, without a server."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.column import Column
from pyspark.sql.connect.functions import builtin as F
from pyspark.sql.connect.plan import Aggregate, LogicalPlan, Project

from connect_plugin import proto
from connect_plugin.client.scan import scan
from connect_plugin.server.scans.scan_counts import push_row_counts

SESSION = "8f5c3c4e-0000-4000-8000-000000000001"


class Client:
    _session_id = SESSION


class Session:
    """What ``DataFrame`` needs of a session to hold a plan."""

    client = Client()


def scan_plan(**options: Any) -> LogicalPlan:
    df = scan(Session(), "/data", format="json", **options)
    plan: LogicalPlan = df._plan
    return plan


def scan_message(**options: Any) -> proto.Scan:
    relation = scan_plan(**options).plan(Client())  # type: ignore[arg-type]
    message = proto.Scan()
    relation.extension.Unpack(message)
    return message


def request(plan: LogicalPlan) -> spark_proto.ExecutePlanRequest:
    built = spark_proto.ExecutePlanRequest(session_id=SESSION)
    built.plan.root.CopyFrom(plan.plan(Client()))  # type: ignore[arg-type]
    return built


def aggregate(child: LogicalPlan, *columns: Column, grouping: tuple[Column, ...] = ()) -> Aggregate:
    return Aggregate(
        child=child,
        group_type="groupby",
        grouping_cols=list(grouping),
        aggregate_cols=list(columns),
        pivot_col=None,
        pivot_values=None,
        grouping_sets=None,
    )


def pruned(built: spark_proto.ExecutePlanRequest) -> tuple[bool, proto.Scan]:
    changed = push_row_counts(built)
    root = built.plan.root
    child = root.aggregate.input if root.HasField("aggregate") else root.project.input
    message = proto.Scan()
    child.extension.Unpack(message)
    return changed, message


def test_the_client_builds_a_scan_stamped_with_its_session() -> None:
    message = scan_message(columns=["A", "dir0"], schema="a INT", on_error="null", max_rows=10)
    assert message.session_id == SESSION
    assert list(message.files.paths) == ["/data"]
    assert (list(message.columns), message.wildcard) == (["A", "dir0"], False)
    assert message.schema_ddl == "a INT"
    assert message.on_error == proto.BadRecordPolicy.BAD_RECORD_POLICY_NULL
    assert message.limits.max_rows == 10
    assert scan_message().wildcard
    assert scan_message(columns=["*"]).wildcard
    assert not scan_message(columns=[]).wildcard
    given = scan_message(schema=pa.schema([("n", pa.int16())]))
    assert given.HasField("schema")
    assert not given.HasField("schema_ddl")


def test_counts_over_a_scan_become_sums_of_per_file_counts() -> None:
    """The scan keeps its columns: each file is read as a query reads it, to count alike."""
    for counted, name in ((F.count(F.lit(1)), "count(1)"), (F.count("*").alias("n"), "n")):
        built = request(aggregate(scan_plan(), counted))
        changed, message = pruned(built)
        assert changed
        assert (list(message.columns), message.wildcard, message.count_rows) == ([], True, True)
        (expression,) = built.plan.root.aggregate.aggregate_expressions
        assert list(expression.alias.name) == [name]
        coalesced = expression.alias.expr.unresolved_function
        assert coalesced.function_name == "coalesce"
        assert coalesced.arguments[0].unresolved_function.function_name == "sum"
        assert coalesced.arguments[1].literal.long == 0
    built = request(Project(scan_plan(columns=["a"]), [F.count(F.lit(1))]))
    changed, message = pruned(built)
    assert changed
    assert message.count_rows
    assert list(built.plan.root.project.expressions[0].alias.name) == ["count(1)"]


def test_a_skipping_scan_counts_what_reading_keeps() -> None:
    built = request(aggregate(scan_plan(on_error="skip", columns=["a"]), F.count(F.lit(1))))
    changed, message = pruned(built)
    assert changed
    assert (list(message.columns), message.count_rows) == (["a"], True)


@pytest.mark.parametrize(
    "build",
    [
        lambda: aggregate(scan_plan(), F.count("a")),
        lambda: aggregate(scan_plan(), F.count_distinct(F.lit(1))),
        lambda: aggregate(scan_plan(), F.count(F.lit(1)), F.max("a")),
        lambda: aggregate(scan_plan(), F.count(F.lit(1)), grouping=(F.col("dir0"),)),
        lambda: aggregate(scan_plan(), F.count(F.lit(5))),
        lambda: aggregate(scan_plan(on_error="reject"), F.count(F.lit(1))),
        lambda: Project(scan_plan(), [F.col("a")]),
    ],
    ids=[
        "count-a-column",
        "distinct",
        "other-aggregate",
        "grouped",
        "count-of-another-literal",
        "reject",
        "plain-select",
    ],
)
def test_anything_else_keeps_its_columns(build: Any) -> None:
    built = request(build())
    before = built.SerializeToString()
    assert not push_row_counts(built)
    assert built.SerializeToString() == before
