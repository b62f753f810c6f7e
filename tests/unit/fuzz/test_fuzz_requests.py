"""Fuzzing request decoding and plan walking: any bytes give a request, None or a documented error."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from google.protobuf.message import Message
from pyspark.sql.connect import proto as spark_proto

from connect_plugin import proto
from connect_plugin.config import Config
from connect_plugin.errors import PlanError, SessionMismatch, TempTableError
from connect_plugin.server.gateway import plugin_handlers
from connect_plugin.server.scans.scan_counts import push_row_counts
from connect_plugin.server.sessions.registry import SessionRegistry
from connect_plugin.server.sessions.store import SqliteSessionStore
from connect_plugin.server.sessions.workspace import Workspace
from connect_plugin.server.statements.dispatch import Dispatcher, SqlSite
from connect_plugin.server.statements.handlers import HandlerRegistry
from connect_plugin.server.statements.recognition import first_keyword, recognise
from connect_plugin.server.transport.plans import (
    MAX_PLAN_DEPTH,
    decode,
    extensions,
    nesting_depth,
    walk_relations,
)
from connect_plugin.server.transport.upstream import Upstream
from tests.unit.fuzz.harness import INPUT_CPU_SECONDS, Fuzzer, InputTooSlow, check
from tests.unit.fuzz.request_inputs import SEEDS, SESSION, request_bytes

DOCUMENTED = (PlanError, SessionMismatch, TempTableError)
"""What the gateway may raise on a request it decoded; each becomes a gRPC status for the client."""

FINDS: tuple[tuple[type[Message], bytes], ...] = (
    (spark_proto.ExecutePlanRequest, b"\x12\n\x01\x80"),
)
"""Inputs fuzzing found that once hung or crashed the gateway."""


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HandlerRegistry]:
    folder: Path = tmp_path_factory.mktemp("fuzz")
    store = SqliteSessionStore(folder / "registry.sqlite3")
    try:
        yield plugin_handlers(
            Config(), SessionRegistry(store), Workspace(folder / "ws"), cast(Upstream, None)
        )
    finally:
        store.close()


def handle(registry: HandlerRegistry, kind: type[Message], data: bytes) -> None:
    """What the gateway does with a request before anything reaches Spark."""
    for descriptor in (kind.DESCRIPTOR, spark_proto.Relation.DESCRIPTOR):
        depth = nesting_depth(data, descriptor, MAX_PLAN_DEPTH)  # type: ignore[arg-type]
        assert depth is None or 1 <= depth <= MAX_PLAN_DEPTH
    message = decode(kind, data)
    if message is None:
        return
    extensions(message)
    list(walk_relations(message))
    Dispatcher(Config(), registry, lambda *_: True).plugin_work(message, SESSION)
    if isinstance(message, spark_proto.ExecutePlanRequest):
        registry.from_plan(message.plan)
        site = SqlSite.of(message.plan)
        if site is not None:
            text = site.relation.query
            recognise(site.text, registry.rules(first_keyword(text), has_tables=True))


def test_fuzz_request_decoding_and_plan_walking(fuzzer: Fuzzer, registry: HandlerRegistry) -> None:
    stats = fuzzer.run(
        "requests", request_bytes(), lambda value: handle(registry, *value), DOCUMENTED
    )
    assert stats.inputs > 0


@pytest.mark.parametrize(
    ("kind", "data"), SEEDS + FINDS, ids=lambda value: getattr(value, "__name__", None)
)
def test_seeds_and_finds_are_handled_in_time(
    registry: HandlerRegistry, kind: type[Message], data: bytes
) -> None:
    check(lambda _: handle(registry, kind, data), None, DOCUMENTED)


def test_reads_stay_inside_their_message() -> None:
    """A field longer than its message, or a varint of more than 10 bytes, is malformed."""
    descriptor = spark_proto.ExecutePlanRequest.DESCRIPTOR
    assert nesting_depth(b"\x12\n\x01\x80", descriptor, MAX_PLAN_DEPTH) is None
    assert nesting_depth(b"\x12\x02\x12\x05abcde", descriptor, MAX_PLAN_DEPTH) is None
    assert nesting_depth(b"\x12" + b"\xff" * 12 + b"\x01", descriptor, MAX_PLAN_DEPTH) is None


def test_an_unreadable_scan_under_a_count_is_refused_as_a_plan_error(
    registry: HandlerRegistry,
) -> None:
    count = spark_proto.Relation()
    aggregate = count.aggregate
    aggregate.group_type = spark_proto.Aggregate.GroupType.GROUP_TYPE_GROUPBY
    aggregate.aggregate_expressions.add().unresolved_function.function_name = "count"
    aggregate.input.extension.type_url = f"type.googleapis.com/{proto.Scan.DESCRIPTOR.full_name}"
    aggregate.input.extension.value = b"\x0a\xff"
    request = spark_proto.ExecutePlanRequest(session_id=SESSION)
    request.plan.root.CopyFrom(count)
    assert not push_row_counts(request)
    dispatcher = Dispatcher(Config(), registry, lambda *_: True)
    with pytest.raises(PlanError, match="cannot be read"):
        dispatcher.plugin_work(request, SESSION)


def test_the_cpu_limit_stops_a_hang() -> None:
    def spin(_: object) -> None:
        while True:
            pass

    started = time.process_time()
    with pytest.raises(InputTooSlow):
        check(spin, None, ())
    assert INPUT_CPU_SECONDS / 2 < time.process_time() - started < INPUT_CPU_SECONDS + 1
