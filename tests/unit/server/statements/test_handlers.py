"""The handler registry: where handlers share a statement's first keyword, one stated order."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.config import Config
from connect_plugin.server.gateway import SQL_ORDER, plugin_handlers
from connect_plugin.server.model.statements import CreateScanView, CreateTempView, Statement
from connect_plugin.server.scans.scan_views import CreateScanViewHandler
from connect_plugin.server.sessions.registry import SessionRegistry
from connect_plugin.server.sessions.store import SqliteSessionStore
from connect_plugin.server.sessions.workspace import Workspace
from connect_plugin.server.statements.handlers import Handler, HandlerRegistry
from connect_plugin.server.statements.recognition import SqlText, first_keyword, recognise
from connect_plugin.server.tables.catalog import Tables
from connect_plugin.server.tables.create import TableCreator
from connect_plugin.server.tables.guards import CreateTempViewHandler, DropViewHandler
from connect_plugin.server.tables.table_handlers import CreateTempTableHandler, DropTempTableHandler
from connect_plugin.server.transport.upstream import Upstream

_TABLES = cast(Tables, None)
"""Recognition needs no tables: the handlers here are never executed."""
STATEMENTS = (
    "CREATE TEMP TABLE t AS SELECT 1",
    "CREATE TEMPORARY VIEW v USING scan OPTIONS (path '/d', format 'csv')",
    "CREATE OR REPLACE TEMP VIEW v AS SELECT 1",
    "CREATE VIEW p AS SELECT * FROM t",
    "CREATE TABLE spark_own (a INT)",
    "DROP TABLE IF EXISTS t",
    "DROP VIEW v",
    "INSERT INTO t SELECT 1",
    "DELETE FROM t WHERE a = 1",
    "SHOW TEMP TABLES",
    "ALTER VIEW v AS SELECT 2",
)


@pytest.fixture(scope="module")
def gateway_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HandlerRegistry]:
    folder: Path = tmp_path_factory.mktemp("handlers")
    store = SqliteSessionStore(folder / "registry.sqlite3")
    try:
        yield plugin_handlers(
            Config(), SessionRegistry(store), Workspace(folder / "ws"), cast(Upstream, None)
        )
    finally:
        store.close()


def _plain_sql(query: str) -> spark_proto.Relation:
    relation = spark_proto.Relation()
    relation.sql.query = query
    return relation


def _recognised(registry: HandlerRegistry, sql: str) -> Statement | None:
    rules = registry.rules(first_keyword(sql), has_tables=True)
    return recognise(SqlText(sql, _plain_sql), rules)


def _keywords(registry: HandlerRegistry) -> set[str]:
    return {keyword for handler in registry.handlers for keyword in handler.sql_keywords}


def test_the_gateways_shared_keywords_are_tried_in_the_stated_order(
    gateway_registry: HandlerRegistry,
) -> None:
    shared = {
        keyword
        for keyword in _keywords(gateway_registry)
        if sum(keyword in h.sql_keywords for h in gateway_registry.handlers) > 1
    }
    assert shared == set(SQL_ORDER)
    for keyword, stated in SQL_ORDER.items():
        assert gateway_registry.rules(keyword, has_tables=True) == [h.parse for h in stated]
    creates = SQL_ORDER["CREATE"]
    assert creates.index(CreateScanViewHandler) < creates.index(CreateTempViewHandler), (
        "a scan view's statement is a temp view's too"
    )


def test_a_scan_view_statement_is_a_scan_view_not_a_guarded_temp_view(
    gateway_registry: HandlerRegistry,
) -> None:
    assert isinstance(_recognised(gateway_registry, STATEMENTS[1]), CreateScanView)
    assert isinstance(_recognised(gateway_registry, STATEMENTS[2]), CreateTempView)


@pytest.mark.parametrize("seed", range(5))
def test_the_order_handlers_are_listed_in_does_not_change_dispatch(
    gateway_registry: HandlerRegistry, seed: int
) -> None:
    listed = list(gateway_registry.handlers)
    random.Random(seed).shuffle(listed)
    shuffled = HandlerRegistry(reversed(listed) if seed == 0 else listed, SQL_ORDER)
    for keyword in _keywords(gateway_registry):
        for has_tables in (False, True):
            assert shuffled.rules(keyword, has_tables=has_tables) == gateway_registry.rules(
                keyword, has_tables=has_tables
            )
    for sql in STATEMENTS:
        assert _recognised(shuffled, sql) == _recognised(gateway_registry, sql), sql


def test_the_registry_refuses_handlers_sharing_a_keyword_with_no_stated_order() -> None:
    creates: list[Handler[Any]] = [
        CreateTempTableHandler(cast(TableCreator, None)),
        CreateTempViewHandler(_TABLES),
    ]
    with pytest.raises(ValueError, match=r"CreateTempTableHandler, CreateTempViewHandler .*CREATE"):
        HandlerRegistry(creates)
    with pytest.raises(ValueError, match=r"handlers DropViewHandler share the first keyword DROP"):
        HandlerRegistry(
            [DropTempTableHandler(_TABLES), DropViewHandler(Config(), _TABLES)],
            {"DROP": (DropTempTableHandler,)},
        )
    alone = HandlerRegistry([CreateTempViewHandler(_TABLES)])
    assert alone.rules("CREATE", has_tables=True) == [CreateTempViewHandler.parse]
