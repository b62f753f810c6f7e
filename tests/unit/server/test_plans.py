"""Finding plugin messages anywhere in a request's plan tree."""

from __future__ import annotations

import pytest
from google.protobuf import wrappers_pb2
from pyspark.sql.connect.proto import base_pb2, relations_pb2

from connect_plugin import proto
from connect_plugin.errors import SessionMismatch, UnknownExtension
from connect_plugin.server.plans import find_extensions

SESSION = "3d4a2c9e-1b7f-4c55-8a0e-5f6b7c8d9e0f"


def _relation_with(message: object, plan_id: int = 7) -> relations_pb2.Relation:
    relation = relations_pb2.Relation()
    relation.common.plan_id = plan_id
    relation.extension.Pack(message)
    return relation


def _execute(root: relations_pb2.Relation) -> base_pb2.ExecutePlanRequest:
    request = base_pb2.ExecutePlanRequest(session_id=SESSION)
    request.plan.root.CopyFrom(root)
    return request


def test_plain_plan_has_no_extensions() -> None:
    request = base_pb2.ExecutePlanRequest(session_id=SESSION)
    request.plan.root.range.end = 10
    assert find_extensions(request, session_id=SESSION) == []


def test_extension_deep_in_a_join_is_found_with_its_plan_id() -> None:
    join = relations_pb2.Relation()
    join.join.left.range.end = 3
    join.join.right.filter.input.CopyFrom(
        _relation_with(proto.ListTempTables(session_id=SESSION), plan_id=42)
    )
    found = find_extensions(_execute(join), session_id=SESSION)
    assert [f.type_name for f in found] == ["connect_plugin.v1.ListTempTables"]
    assert found[0].holder.common.plan_id == 42  # type: ignore[attr-defined]
    assert found[0].message == proto.ListTempTables(session_id=SESSION)


def test_extension_inside_an_analyze_request_is_found() -> None:
    request = base_pb2.AnalyzePlanRequest(session_id=SESSION)
    request.schema.plan.root.CopyFrom(_relation_with(proto.DropTempTable(session_id=SESSION, name="t")))
    found = find_extensions(request, session_id=SESSION)
    assert [f.message.name for f in found] == ["t"]  # type: ignore[attr-defined]


def test_unknown_extension_names_its_type() -> None:
    request = _execute(_relation_with(wrappers_pb2.Int64Value(value=1)))
    with pytest.raises(UnknownExtension, match=r"\[google.protobuf.Int64Value\]"):
        find_extensions(request, session_id=SESSION)


def test_forwarded_prefix_is_left_for_spark() -> None:
    request = _execute(_relation_with(wrappers_pb2.Int64Value(value=1)))
    assert find_extensions(request, session_id=SESSION, forwarded_prefixes=("google.protobuf.",)) == []


def test_message_for_another_session_is_refused_naming_both() -> None:
    other = "00000000-0000-0000-0000-000000000001"
    request = _execute(_relation_with(proto.ListTempTables(session_id=other)))
    with pytest.raises(SessionMismatch, match=other) as raised:
        find_extensions(request, session_id=SESSION)
    assert SESSION in str(raised.value)
