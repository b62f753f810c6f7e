"""Decoding plans of any depth Spark accepts, and finding plugin messages anywhere in them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import cast

import pytest
from google.protobuf import wrappers_pb2
from google.protobuf.message import Message
from pyspark.sql.connect.proto import base_pb2, expressions_pb2, relations_pb2

from connect_plugin import proto
from connect_plugin.config import Config
from connect_plugin.errors import PlanError, SessionMismatch, UnknownExtension
from connect_plugin.proto import PLUGIN_RELATIONS
from connect_plugin.server.gateway import plugin_handlers
from connect_plugin.server.model.statements import (
    CreateTempTable,
    ListTempTables,
    Name,
    ReadTempTable,
)
from connect_plugin.server.sessions.registry import SessionRegistry
from connect_plugin.server.sessions.store import SqliteSessionStore
from connect_plugin.server.sessions.workspace import Workspace
from connect_plugin.server.statements.dispatch import MAX_PLUGIN_NESTING, Dispatcher
from connect_plugin.server.statements.handlers import HandlerRegistry
from connect_plugin.server.tables.catalog import Tables
from connect_plugin.server.tables.create import TableCreator
from connect_plugin.server.tables.table_handlers import (
    CreateTempTableHandler,
    DropTempTableHandler,
    ListTempTablesHandler,
    ReadTempTableHandler,
)
from connect_plugin.server.transport.plans import MAX_PLAN_DEPTH, decode, extensions, nesting_depth
from connect_plugin.server.transport.upstream import Upstream
from tests.unit.server.wire import nested_projections

SESSION = "3d4a2c9e-1b7f-4c55-8a0e-5f6b7c8d9e0f"
_TABLES = cast(Tables, None)
"""Recognition needs no tables: the handlers here are never executed."""


def _dispatcher(*forwarded: str) -> Dispatcher:
    registry = HandlerRegistry(
        [
            CreateTempTableHandler(cast(TableCreator, None)),
            DropTempTableHandler(_TABLES),
            ListTempTablesHandler(_TABLES),
            ReadTempTableHandler(_TABLES),
        ]
    )
    return Dispatcher(Config(forward_extensions=forwarded), registry, lambda *_: False)


def _relation_with(message: Message, plan_id: int = 7) -> relations_pb2.Relation:
    relation = relations_pb2.Relation()
    relation.common.plan_id = plan_id
    relation.extension.Pack(message)
    return relation


def _execute(root: relations_pb2.Relation) -> base_pb2.ExecutePlanRequest:
    request = base_pb2.ExecutePlanRequest(session_id=SESSION)
    request.plan.root.CopyFrom(root)
    return request


def test_plans_as_deep_as_spark_accepts_decode_and_deeper_ones_do_not() -> None:
    deepest = (MAX_PLAN_DEPTH - 4) // 2  # request, plan, root and range around them
    decoded = decode(base_pb2.ExecutePlanRequest, nested_projections(deepest))
    assert decoded is not None
    relation, levels = decoded.plan.root, 0
    while relation.HasField("project"):
        relation, levels = relation.project.input, levels + 1
    assert levels == deepest
    assert decode(base_pb2.ExecutePlanRequest, nested_projections(deepest + 1)) is None
    assert decode(base_pb2.ExecutePlanRequest, nested_projections(40_000)) is None, "refused unread"


def test_the_depth_of_malformed_bytes_is_none() -> None:
    descriptor = base_pb2.ExecutePlanRequest.DESCRIPTOR
    whole = nested_projections(3)
    assert nesting_depth(whole, descriptor, MAX_PLAN_DEPTH) == 10
    assert nesting_depth(whole[:-1], descriptor, MAX_PLAN_DEPTH) is None
    assert nesting_depth(b"\xff", descriptor, MAX_PLAN_DEPTH) is None


def test_the_gateway_handles_every_plugin_relation_and_only_those(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "r.sqlite3")
    try:
        handlers = plugin_handlers(
            Config(), SessionRegistry(store), Workspace(tmp_path), cast(Upstream, None)
        )
    finally:
        store.close()
    assert handlers.message_names == sorted(PLUGIN_RELATIONS)


def test_plain_plan_has_no_extensions() -> None:
    request = base_pb2.ExecutePlanRequest(session_id=SESSION)
    request.plan.root.range.end = 10
    assert extensions(request) == []
    assert _dispatcher().plugin_work(request, SESSION) == []


def test_extension_deep_in_a_join_is_found_with_its_plan_id() -> None:
    join = relations_pb2.Relation()
    join.join.left.range.end = 3
    join.join.right.filter.input.CopyFrom(
        _relation_with(proto.ListTempTables(session_id=SESSION), plan_id=42)
    )
    (work,) = _dispatcher().plugin_work(_execute(join), SESSION)
    assert work.type_name == "connect_plugin.v1.ListTempTables"
    assert work.holder.common.plan_id == 42
    assert work.statement == ListTempTables()


def test_plugin_relations_inside_a_plugin_relations_input_are_found() -> None:
    read = _relation_with(proto.ReadTempTable(session_id=SESSION, name="src"), plan_id=3)
    create = proto.CreateTempTableAsSelect(session_id=SESSION, name="copy")
    create.input.filter.input.CopyFrom(read)
    (work,) = _dispatcher().plugin_work(_execute(_relation_with(create)), SESSION)
    assert isinstance(work.statement, CreateTempTable)
    (inner,) = work.inner
    assert inner.statement == ReadTempTable(Name(("src",)))
    assert inner.holder is work.statement.input.filter.input


def test_extension_inside_an_analyze_request_is_found() -> None:
    request = base_pb2.AnalyzePlanRequest(session_id=SESSION)
    request.schema.plan.root.CopyFrom(
        _relation_with(proto.ReadTempTable(session_id=SESSION, name="t"))
    )
    (work,) = _dispatcher().plugin_work(request, SESSION)
    assert work.statement == ReadTempTable(Name(("t",)))


def test_unknown_extension_names_its_type() -> None:
    request = _execute(_relation_with(wrappers_pb2.Int64Value(value=1)))
    with pytest.raises(UnknownExtension, match=r"\[google.protobuf.Int64Value\]"):
        _dispatcher().plugin_work(request, SESSION)


def test_forwarded_prefix_is_left_for_spark() -> None:
    request = _execute(_relation_with(wrappers_pb2.Int64Value(value=1)))
    assert _dispatcher("google.protobuf.").plugin_work(request, SESSION) == []


def test_message_for_another_session_is_refused_naming_both() -> None:
    other = "00000000-0000-0000-0000-000000000001"
    request = _execute(_relation_with(proto.ListTempTables(session_id=other)))
    with pytest.raises(SessionMismatch, match=other) as raised:
        _dispatcher().plugin_work(request, SESSION)
    assert SESSION in str(raised.value)


def test_a_plugin_message_where_a_relation_cannot_stand_is_refused() -> None:
    request = _execute(relations_pb2.Relation())
    column = expressions_pb2.Expression()
    column.extension.Pack(proto.DropTempTable(session_id=SESSION, name="t"))
    request.plan.root.project.expressions.append(column)
    with pytest.raises(PlanError, match=r"\[connect_plugin.v1.DropTempTable\].*expression"):
        _dispatcher().plugin_work(request, SESSION)


def test_more_than_one_change_in_a_request_is_refused_naming_each() -> None:
    union = relations_pb2.Relation()
    for side, name in ((union.set_op.left_input, "a"), (union.set_op.right_input, "b")):
        side.CopyFrom(_relation_with(proto.CreateTempTableAsSelect(session_id=SESSION, name=name)))
    recognised = asyncio.run(_dispatcher().recognise(_execute(union)))
    assert recognised is not None
    with pytest.raises(PlanError, match=r"\[a\].*\[b\]"):
        recognised.check_changes()


def test_plugin_relations_nested_without_end_are_refused() -> None:
    relation = _relation_with(proto.ListTempTables(session_id=SESSION))
    for _ in range(MAX_PLUGIN_NESTING + 1):
        create = proto.CreateTempTableAsSelect(session_id=SESSION, name="t")
        create.input.CopyFrom(relation)
        relation = _relation_with(create)
    with pytest.raises(PlanError, match="nest deeper than"):
        _dispatcher().plugin_work(_execute(relation), SESSION)
