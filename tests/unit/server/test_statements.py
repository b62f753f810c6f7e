"""The gateway's SQL recognition: only its own statements, exactly as written."""

from __future__ import annotations

import pytest

from connect_plugin.errors import TempTableError
from connect_plugin.server.statements import (
    CreatePersistentView,
    CreateTempTable,
    CreateTempView,
    DropTable,
    DropView,
    InsertInto,
    Name,
    ShowTempTables,
    check_table_name,
    parse_statement,
)


def test_full_cttas_with_every_clause_keeps_the_query_text_verbatim() -> None:
    sql = (
        "-- leading comment\n create /* c */ Or RePlace TEMP table If Not Exists tmp.`My T`"
        " (a, `b c`) USING json PARTITIONED BY (a) OPTIONS ('compression' = 'gzip', x.y 'z')"
        "  AS select 'as (' AS a, \"AS\" b -- tail"
    )
    statement = parse_statement(sql)
    assert statement == CreateTempTable(
        name=Name(("tmp", "My T")),
        query="select 'as (' AS a, \"AS\" b -- tail",
        column_names=("a", "b c"),
        format="json",
        partition_columns=("a",),
        options={"compression": "gzip", "x.y": "z"},
        if_not_exists=True,
        or_replace=True,
    )


def test_clauses_in_any_order_and_a_parenthesized_query() -> None:
    statement = parse_statement(
        "CREATE TEMPORARY TABLE t OPTIONS (k 'v') USING csv AS (SELECT 1 UNION ALL SELECT 2)"
    )
    assert isinstance(statement, CreateTempTable)
    assert (statement.format, statement.options) == ("csv", {"k": "v"})
    assert statement.query == "(SELECT 1 UNION ALL SELECT 2)"


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 'CREATE TEMP TABLE t AS SELECT 1'",
        "/* CREATE TEMP TABLE t AS SELECT 1 */ SELECT 1",
        "CREATE TABLE t AS SELECT 1",
        "CREATE TEMPORARY TABLE t USING parquet OPTIONS (path '/x')",
        "CREATE GLOBAL TEMPORARY VIEW v AS SELECT 1",
        "DROP DATABASE d",
        "SHOW TABLES",
        "SHOW TEMPORARY TABLES LIKE 'x'",
        "",
        "'unterminated",
    ],
)
def test_statements_that_are_not_ours_go_to_spark(sql: str) -> None:
    assert parse_statement(sql) is None


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("DROP TABLE IF EXISTS tmp.T", DropTable(Name(("tmp", "T")), True)),
        ("drop table `a``b`", DropTable(Name(("a`b",)), False)),
        ("DROP VIEW v", DropView(Name(("v",)), False)),
        ("show temporary tables", ShowTempTables()),
        ("SHOW TEMP TABLES;", ShowTempTables()),
        ("INSERT OVERWRITE TABLE t SELECT 1", InsertInto(Name(("t",)))),
        ("insert into db.t values (1)", InsertInto(Name(("db", "t")))),
        ("CREATE OR REPLACE TEMP VIEW v AS SELECT 1", CreateTempView(Name(("v",)))),
        (
            "CREATE VIEW default.v AS SELECT * FROM t JOIN (SELECT 1) s JOIN db.u ON true",
            CreatePersistentView(Name(("default", "v")), (Name(("t",)), Name(("db", "u")))),
        ),
    ],
)
def test_other_statements(sql: str, expected: object) -> None:
    assert parse_statement(sql) == expected


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("CREATE TEMP TABLE t (a, ) AS SELECT 1", r"expected column names at \[\)\]"),
        ("CREATE TEMP TABLE t USING AS SELECT 1", r"expected a format name"),
        ("CREATE TEMP TABLE t USING csv USING json AS SELECT 1", r"USING given twice"),
        ("CREATE TEMP TABLE t STORED AS parquet AS SELECT 1", r"expected USING, PARTITIONED BY"),
        ("CREATE TEMP TABLE t AS ", r"a query must follow AS"),
    ],
)
def test_malformed_cttas_is_a_clear_error_with_a_position(sql: str, message: str) -> None:
    with pytest.raises(TempTableError, match=message):
        parse_statement(sql)


def test_table_name_rules() -> None:
    assert check_table_name(Name(("TMP", "x")), "tmp") == "x"
    with pytest.raises(TempTableError, match=r"outside of default temporary workspace \[tmp\]"):
        check_table_name(Name(("other", "x")), "tmp")
    with pytest.raises(TempTableError, match="not a valid temporary table name"):
        check_table_name(Name(("a\tb",)), "tmp")
    with pytest.raises(TempTableError, match="not a valid temporary table name"):
        check_table_name(Name(("x" * 129,)), "tmp")
