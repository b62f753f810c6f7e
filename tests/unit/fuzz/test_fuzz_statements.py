"""Fuzzing the SQL recogniser: any text is one of the gateway's statements, Spark's, or a
TempTableError naming the problem; never a crash, never a hang."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import TempTableError
from connect_plugin.server.model.statements import CreateTempTable, Statement
from connect_plugin.server.statements.recognition import SqlText, first_keyword, recognise
from connect_plugin.server.table_files.table_names import check_table_name
from connect_plugin.server.tables.guards import (
    AlterViewHandler,
    CreatePersistentViewHandler,
    CreateTempViewHandler,
    DropViewHandler,
)
from connect_plugin.server.tables.inserts import InsertIntoHandler
from connect_plugin.server.tables.table_handlers import (
    CreateTempTableHandler,
    DropTempTableHandler,
    ListTempTablesHandler,
)
from tests.unit.fuzz.harness import Fuzzer, check

FULLWIDTH_CREATE = "".join(chr(ord(letter) + 0xFEE0) for letter in "CREATE")
RULES = [
    h.parse
    for h in (
        CreateTempTableHandler,
        DropTempTableHandler,
        ListTempTablesHandler,
        DropViewHandler,
        InsertIntoHandler,
        CreateTempViewHandler,
        CreatePersistentViewHandler,
        AlterViewHandler,
    )
]
WORDS = (
    "CREATE", "OR", "REPLACE", "TEMPORARY", "TEMP", "TABLE", "TABLES", "VIEW", "IF", "NOT",
    "EXISTS", "AS", "SELECT", "USING", "PARTITIONED", "BY", "OPTIONS", "DROP", "PURGE", "SHOW",
    "IN", "LIKE", "INSERT", "INTO", "OVERWRITE", "ALTER", "RENAME", "TO", "SET", "TBLPROPERTIES",
    "IDENTIFIER", "GLOBAL", "VALUES", "FROM", "temp", "t", "a.b", "`we``ird`", "'x'", "'a.b.c'",
    "''", "'", "\"", "`", "(", ")", ",", ".", "=", ";", "*", "1", "/*", "*/", "--", "\n", "$$",
    "\\", "\x00", FULLWIDTH_CREATE,
)  # fmt: skip
SEPARATORS = (" ", "", "\n", "\t", "/**/", "-- c\n", "  ")

SEEDS = (
    "CREATE TEMPORARY TABLE t AS SELECT 1",
    "/* CREATE TEMPORARY TABLE t */ SELECT 1",
    "-- DROP TABLE t\nDROP TABLE IF EXISTS t;",
    "CREATE TEMPORARY TABLE `we``ird` AS SELECT ';'",
    "CREATE TEMPORARY TABLE IDENTIFIER('a.b.c') AS SELECT 1",
    "CREATE TEMPORARY TABLE IDENTIFIER('') AS SELECT 1",
    "CREATE TEMPORARY TABLE IDENTIFIER('`') AS SELECT 1",
    "CREATE TEMPORARY TABLE IDENTIFIER(",
    "CREATE TEMPORARY TABLE t AS SELECT '",
    "CREATE TEMPORARY TABLE t AS /* never closed",
    "CREATE TEMPORARY TABLE t USING parquet USING csv AS SELECT 1",
    "CREATE TEMPORARY TABLE t OPTIONS ('a' 'b' AS SELECT 1",
    "CREATE TEMPORARY TABLE t OPTIONS (" + "'k'='v'," * 20_000 + "'k'='v') AS SELECT 1",
    "CREATE TEMPORARY TABLE t (" + "c," * 30_000 + "c) AS SELECT 1",
    "CREATE TEMPORARY TABLE " + "a" * 70_000 + " AS SELECT 1",
    "CREATE TEMPORARY TABLE " + "a." * 40_000 + "a AS SELECT 1",
    "CREATE TEMPORARY TABLE t\x00 AS SELECT 1",
    "CREATE TEMPORARY TABLE t AS SELECT 1 ; DROP TABLE u",
    "CREATE TEMPORARY TABLE t AS SELECT $$x$$",
    FULLWIDTH_CREATE + " TEMPORARY TABLE t AS SELECT 1",
    " " * 5_000 + "DROP TABLE t",
    "/*" * 3_000 + " DROP TABLE t",
    "/* /* nested */ still a comment */ DROP VIEW t",
    "DROP VIEW IF EXISTS",
    "DROP TABLE t.u.v.w PURGE extra words",
    "ALTER VIEW t RENAME TO",
    "ALTER VIEW IDENTIFIER('t') AS SELECT 1",
    "INSERT INTO t VALUES ('\x00')",
    "INSERT OVERWRITE TABLE",
    "SHOW TEMPORARY TABLES LIKE '",
    "SHOW TABLES IN temp LIKE '*'",
    "CREATE OR REPLACE TEMPORARY VIEW t AS SELECT 1",
    "CREATE GLOBAL TEMPORARY VIEW t AS SELECT 1",
    "CREATE VIEW v AS SELECT * FROM t",
    "CREATE VIEW v AS SELECT * FROM " + "(" * 10_000,
    "--",
    "",
    ";",
)
"""Statements meant to fool or stall the recogniser; each is also run as a test of its own."""


def relation_of(query: str) -> spark_proto.Relation:
    relation = spark_proto.Relation()
    relation.sql.query = query
    return relation


def recognised(text: str) -> Statement | None:
    """What the gateway makes of ``text``, its temp table names checked as it checks them."""
    first_keyword(text)
    request = recognise(SqlText(text, relation_of), RULES)
    if isinstance(request, CreateTempTable):
        check_table_name(request.name)
    return request


def statements() -> st.SearchStrategy[str]:
    """Statements of the recogniser's words in any order, mutated seeds, and any text."""
    pieces = st.one_of(st.sampled_from(WORDS), st.text(max_size=4))
    composed = st.tuples(st.lists(pieces, max_size=24), st.sampled_from(SEPARATORS)).map(
        lambda words_and_separator: words_and_separator[1].join(words_and_separator[0])
    )
    short_seeds = [s for s in SEEDS if len(s) < 200]
    spliced = st.tuples(st.sampled_from(short_seeds), st.integers(0, 200), st.text(max_size=8)).map(
        lambda seed: seed[0][: seed[1]] + seed[2] + seed[0][seed[1] :]
    )
    padded = st.tuples(st.sampled_from(SEPARATORS), st.integers(0, 5_000), composed).map(
        lambda pad: pad[0] * pad[1] + pad[2]
    )
    return st.one_of(composed, spliced, padded, st.text())


def test_fuzz_sql_recogniser(fuzzer: Fuzzer) -> None:
    stats = fuzzer.run("statements", statements(), recognised, (TempTableError,))
    assert stats.inputs > 0


@pytest.mark.parametrize("text", SEEDS, ids=lambda text: repr(text[:40]))
def test_nasty_statements_are_recognised_or_refused_in_time(text: str) -> None:
    check(recognised, text, (TempTableError,))
