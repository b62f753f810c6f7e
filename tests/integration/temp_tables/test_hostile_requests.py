"""Requests that once lost data or left the gateway half-done, from the stock pyspark client.

Each test sends through the real gateway what a careless or hostile client
can send: another session's id spelled differently, text after a statement,
a plugin message where no relation belongs, a view of a temp table dropped
or changed behind the gateway's back. The gateway refuses before acting, or
acts on the whole request; no other session's data is touched.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from pyspark.errors import AnalysisException
from pyspark.errors.exceptions.connect import SparkConnectGrpcException
from pyspark.sql import SparkSession
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.column import Column
from pyspark.sql.connect.dataframe import DataFrame
from pyspark.sql.connect.expressions import Expression

import connect_plugin
from connect_plugin import proto
from connect_plugin.client.plan import PluginRelation, session_id_of
from connect_plugin.server.gateway import Gateway
from tests.integration.support import session_folder, table_folders, temp_table_names


def _attached(gateway: Gateway, session_id: str, user_id: str | None) -> SparkSession:
    url = f"{gateway.address}/;session_id={session_id}"
    if user_id:
        url += f";user_id={user_id}"
    return SparkSession.builder.remote(url).create()


def _status(raised: pytest.ExceptionInfo[SparkConnectGrpcException]) -> grpc.StatusCode:
    code = raised.value.getGrpcStatusCode()
    assert code is not None
    return code


@pytest.mark.parametrize("user_id", [None, "mallory"], ids=["same-user", "other-user"])
def test_a_release_with_another_spelling_of_a_session_id_is_refused_and_deletes_nothing(
    spark: SparkSession, gateway: Gateway, workspace: Path, user_id: str | None
) -> None:
    spark.sql("CREATE TEMPORARY TABLE victim AS SELECT id FROM range(5)")
    folder = session_folder(workspace, spark)
    spelled = spark.client._session_id.upper()
    attacker = _attached(gateway, spelled, user_id or spark.client._user_id)
    refused: SparkConnectGrpcException | None = None
    try:
        attacker.client.release_session()
    except SparkConnectGrpcException as exc:
        refused = exc
    finally:
        attacker.release_session_on_close = False
        attacker.stop()
    assert folder.is_dir(), "a release under another spelling deleted the session's files"
    assert len(table_folders(workspace, spark)) == 1
    assert connect_plugin.temp_table(spark, "victim").count() == 5
    assert temp_table_names(spark) == ["victim"]
    assert refused is not None
    assert refused.getGrpcStatusCode() == grpc.StatusCode.INVALID_ARGUMENT
    assert spelled in str(refused)


def test_a_session_with_a_non_canonical_id_can_make_no_temp_table(
    gateway: Gateway, workspace: Path
) -> None:
    spelled = str(uuid.uuid4()).upper()
    session = _attached(gateway, spelled, None)
    try:
        with pytest.raises(SparkConnectGrpcException) as raised:
            session.sql("CREATE TEMPORARY TABLE t AS SELECT 1 AS x").collect()
        assert _status(raised) == grpc.StatusCode.INVALID_ARGUMENT
        assert spelled in str(raised.value)
        assert "lower-case" in str(raised.value)
    finally:
        session.release_session_on_close = False
        session.stop()
    assert not (workspace / spelled.lower()).exists()


@pytest.mark.parametrize(
    ("statement", "leftover"),
    [
        ("DROP TABLE victim; DROP TABLE bystander", "; DROP TABLE bystander"),
        ("DROP TABLE victim xyz", "xyz"),
        ("DROP TABLE victim, bystander", ", bystander"),
        ("DROP TABLE IF EXISTS session.victim PURGE nonsense", "nonsense"),
    ],
    ids=["second-statement", "trailing-word", "list", "after-purge"],
)
def test_text_after_a_recognised_statement_is_an_error_naming_it(
    spark: SparkSession, statement: str, leftover: str
) -> None:
    spark.sql("CREATE TEMPORARY TABLE victim AS SELECT 1 AS x")
    spark.sql("CREATE TEMPORARY TABLE bystander AS SELECT 2 AS x")
    with pytest.raises(AnalysisException) as raised:
        spark.sql(statement).collect()
    assert f"[{leftover}]" in str(raised.value)
    assert sorted(temp_table_names(spark)) == ["bystander", "victim"]
    assert spark.table("victim").count() == 1


def test_a_statement_ending_in_a_semicolon_or_a_comment_is_whole(spark: SparkSession) -> None:
    spark.sql("CREATE TEMPORARY TABLE a AS SELECT 1 AS x")
    spark.sql("CREATE TEMPORARY TABLE b AS SELECT 1 AS x")
    spark.sql("CREATE TEMPORARY TABLE c AS SELECT 1 AS x")
    assert spark.sql("DROP TABLE a;").collect()[0].ok is True
    assert spark.sql("DROP TABLE b -- done\n").collect()[0].ok is True
    assert spark.sql("DROP TABLE c PURGE /* permanent-table option */").collect()[0].ok is True
    assert temp_table_names(spark) == []


class _InExpression(Expression):
    """A plugin message packed where only Spark expressions belong."""

    def __init__(self, message: Message) -> None:
        super().__init__()
        self._message = message

    def to_plan(self, session: Any) -> spark_proto.Expression:
        expression = spark_proto.Expression()
        message = type(self._message)()
        message.CopyFrom(self._message)
        message.session_id = session_id_of(session)  # type: ignore[attr-defined]
        expression.extension.Pack(message)
        return expression

    def __repr__(self) -> str:
        return "plugin message"


def test_a_plugin_message_inside_an_expression_is_refused_before_any_side_effect(
    spark: SparkSession, workspace: Path
) -> None:
    spark.sql("CREATE TEMPORARY TABLE kept AS SELECT 1 AS x")
    create = proto.CreateTempTableAsSelect(name="sneaky")
    create.input.range.CopyFrom(spark_proto.Range(end=3, step=1))
    drop = proto.DropTempTable(name="kept")
    for message in (create, drop):
        frame = spark.range(1).select(Column(_InExpression(message)))
        with pytest.raises(SparkConnectGrpcException) as raised:
            frame.collect()
        assert _status(raised) == grpc.StatusCode.INVALID_ARGUMENT
        assert message.DESCRIPTOR.full_name in str(raised.value)
        assert "expression" in str(raised.value).lower()
    assert temp_table_names(spark) == ["kept"]
    assert len(table_folders(workspace, spark)) == 1
    assert spark.table("kept").count() == 1


class _Union(PluginRelation):
    """Two plugin relations in one plan: a union of two CTTAS results."""

    def __init__(self, left: DataFrame, right: DataFrame) -> None:
        super().__init__()
        self._left, self._right = left, right

    def plan(self, session: Any) -> spark_proto.Relation:
        relation = self._create_proto_relation()
        relation.set_op.left_input.CopyFrom(self._left._plan.plan(session))
        relation.set_op.right_input.CopyFrom(self._right._plan.plan(session))
        relation.set_op.set_op_type = spark_proto.SetOperation.SetOpType.SET_OP_TYPE_UNION
        relation.set_op.is_all = True
        return relation


class _Message(PluginRelation):
    def __init__(self, message: Message) -> None:
        super().__init__()
        self._message = message

    def to_plugin_message(self, client: Any) -> Message:
        message = type(self._message)()
        message.CopyFrom(self._message)
        message.session_id = session_id_of(client)  # type: ignore[attr-defined]
        return message


def test_two_plugin_relations_that_change_tables_in_one_request_are_refused(
    spark: SparkSession, workspace: Path
) -> None:
    first = proto.CreateTempTableAsSelect(name="first")
    first.input.range.CopyFrom(spark_proto.Range(end=1, step=1))
    second = proto.CreateTempTableAsSelect(name="second")
    second.input.range.CopyFrom(spark_proto.Range(end=2, step=1))
    both = DataFrame(
        _Union(DataFrame(_Message(first), spark), DataFrame(_Message(second), spark)), spark
    )
    with pytest.raises(SparkConnectGrpcException) as raised:
        both.collect()
    assert _status(raised) == grpc.StatusCode.INVALID_ARGUMENT
    assert "[first]" in str(raised.value)
    assert "[second]" in str(raised.value)
    assert temp_table_names(spark) == []
    assert table_folders(workspace, spark) == []


@pytest.fixture
def permanent(spark: SparkSession) -> Iterator[str]:
    name = f"perm_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE default.{name} USING parquet AS SELECT 'permanent' AS c")
    yield name
    spark.sql(f"DROP TABLE IF EXISTS default.{name}")


def test_a_view_dropped_behind_the_gateways_back_is_reported_and_cleaned_up(
    spark: SparkSession, workspace: Path, permanent: str
) -> None:
    spark.sql(f"CREATE TEMPORARY TABLE {permanent} AS SELECT 'temporary' AS c")
    assert connect_plugin.temp_table(spark, permanent).first().c == "temporary"  # type: ignore[union-attr]
    spark.sql(f"EXECUTE IMMEDIATE 'DROP VIEW {permanent}'")
    with pytest.raises(AnalysisException, match="TEMP_TABLE_NOT_FOUND") as raised:
        connect_plugin.temp_table(spark, permanent).collect()
    assert "dropped or replaced outside the gateway" in str(raised.value)
    assert temp_table_names(spark) == []
    assert table_folders(workspace, spark) == []
    assert spark.table(permanent).first().c == "permanent"  # type: ignore[union-attr]


def test_a_view_replaced_behind_the_gateways_back_is_never_read_as_the_table(
    spark: SparkSession, workspace: Path, permanent: str
) -> None:
    spark.sql(f"CREATE TEMPORARY TABLE {permanent} AS SELECT 'temporary' AS c")
    spark.sql(f"EXECUTE IMMEDIATE 'CREATE OR REPLACE TEMP VIEW {permanent} AS SELECT 1 AS c'")
    with pytest.raises(AnalysisException, match="TEMP_TABLE_NOT_FOUND"):
        connect_plugin.temp_table(spark, permanent).collect()
    assert temp_table_names(spark) == []
    assert table_folders(workspace, spark) == []


def test_listing_reports_a_table_whose_view_went_behind_the_gateways_back(
    spark: SparkSession, workspace: Path
) -> None:
    spark.sql("CREATE TEMPORARY TABLE gone_view AS SELECT 1 AS x")
    spark.sql("CREATE TEMPORARY TABLE kept AS SELECT 2 AS x")
    spark.sql("EXECUTE IMMEDIATE 'DROP VIEW gone_view'")
    assert temp_table_names(spark) == ["kept"]
    assert len(table_folders(workspace, spark)) == 1


def test_catalog_and_sql_ways_around_drop_table_keep_the_registry_in_step(
    spark: SparkSession, workspace: Path, permanent: str
) -> None:
    spark.sql(f"CREATE TEMPORARY TABLE {permanent} AS SELECT 'temporary' AS c")
    with pytest.raises(AnalysisException, match=r"is not a VIEW but a temporary table"):
        spark.catalog.dropTempView(permanent)
    for statement in (
        f"ALTER VIEW {permanent} AS SELECT 1 AS c",
        f"ALTER TABLE {permanent} RENAME TO x",
    ):
        with pytest.raises(AnalysisException, match=r"is a temporary table of this session"):
            spark.sql(statement).collect()
    assert connect_plugin.temp_table(spark, permanent).first().c == "temporary"  # type: ignore[union-attr]
    result = spark.sql(f"DROP TABLE IDENTIFIER('{permanent}')").collect()
    assert [tuple(r) for r in result] == [(True, f"Temporary table [{permanent}] dropped")]
    assert temp_table_names(spark) == []
    assert table_folders(workspace, spark) == []
    assert spark.table(permanent).first().c == "permanent"  # type: ignore[union-attr]
