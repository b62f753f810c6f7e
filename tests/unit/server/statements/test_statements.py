"""The gateway's SQL recognition: only its own statements, exactly as written, whole, and bounded."""

from __future__ import annotations

import pytest
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import TempTableError
from connect_plugin.server.model.statements import (
    AlterView,
    CreatePersistentView,
    CreateTempTable,
    CreateTempView,
    DropTempTable,
    DropView,
    InsertInto,
    ListTempTables,
    Name,
    Statement,
)
from connect_plugin.server.statements import recognition as statements
from connect_plugin.server.statements.recognition import (
    MAX_TOKENIZED_CHARS,
    SqlText,
    first_keyword,
    recognise,
)
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

RULES = [
    handler.parse
    for handler in (
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


def plain_sql(query: str) -> spark_proto.Relation:
    relation = spark_proto.Relation()
    relation.sql.query = query
    return relation


def parse(sql: str) -> Statement | None:
    return recognise(SqlText(sql, plain_sql), RULES)


def test_full_cttas_with_every_clause_keeps_the_query_text_verbatim() -> None:
    sql = (
        "-- leading comment\n create /* c */ Or RePlace TEMP table If Not Exists tmp.`My T`"
        " (a, `b c`) USING json PARTITIONED BY (a) OPTIONS ('compression' = 'gzip', x.y 'z')"
        "  AS select 'as (' AS a, \"AS\" b -- tail"
    )
    assert parse(sql) == CreateTempTable(
        name=Name(("tmp", "My T")),
        input=plain_sql("select 'as (' AS a, \"AS\" b -- tail"),
        column_names=("a", "b c"),
        format="json",
        partition_columns=("a",),
        options={"compression": "gzip", "x.y": "z"},
        if_not_exists=True,
        or_replace=True,
    )


def test_the_query_keeps_the_statements_arguments() -> None:
    def with_arguments(query: str) -> spark_proto.Relation:
        relation = plain_sql(query)
        relation.sql.named_arguments["x"].literal.integer = 7
        return relation

    found = recognise(SqlText("CREATE TEMP TABLE t AS SELECT :x AS v", with_arguments), RULES)
    assert isinstance(found, CreateTempTable)
    assert found.input.sql.query == "SELECT :x AS v"
    assert found.input.sql.named_arguments["x"].literal.integer == 7


def test_clauses_in_any_order_and_a_parenthesized_query() -> None:
    statement = parse(
        "CREATE TEMPORARY TABLE t OPTIONS (k 'v') USING csv AS (SELECT 1 UNION ALL SELECT 2)"
    )
    assert isinstance(statement, CreateTempTable)
    assert (statement.format, statement.options) == ("csv", {"k": "v"})
    assert statement.input.sql.query == "(SELECT 1 UNION ALL SELECT 2)"


def test_column_definitions_reach_spark_as_written_with_or_without_a_query() -> None:
    definitions = "a INT NOT NULL, `b c` MAP<STRING, DECIMAL(10, 2)> COMMENT 'x (y'"
    declared = parse(
        f"CREATE OR REPLACE TEMP TABLE t ({definitions}) USING parquet PARTITIONED BY (a);"
    )
    assert declared == CreateTempTable(
        name=Name(("t",)),
        input=None,
        format="parquet",
        partition_columns=("a",),
        or_replace=True,
        schema=definitions,
    )
    typed = parse(f"CREATE TEMP TABLE t ({definitions}) AS VALUES (1, map('k', 2.5))")
    assert isinstance(typed, CreateTempTable)
    assert typed.schema == definitions
    assert typed.input == plain_sql("VALUES (1, map('k', 2.5))")
    named = parse("CREATE TEMP TABLE t (a, b) AS VALUES (1, 2)")
    assert isinstance(named, CreateTempTable)
    assert (named.column_names, named.schema) == (("a", "b"), None)


def test_char_and_varchar_types_are_found_where_they_are_types() -> None:
    definitions = "a VARCHAR(3), b STRUCT<x: char ( 2 )>, `char` INT, c STRING COMMENT 'VARCHAR(9)'"
    assert statements.char_types(definitions) == ["VARCHAR(3)", "char ( 2 )"]


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
    assert parse(sql) is None


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("DROP TABLE IF EXISTS tmp.T", DropTempTable(Name(("tmp", "T")), True, strict=False)),
        ("drop table `a``b`", DropTempTable(Name(("a`b",)), False, strict=False)),
        ("DROP TABLE t PURGE;", DropTempTable(Name(("t",)), False, strict=False)),
        ("DROP TABLE IDENTIFIER('tmp.x')", DropTempTable(Name(("tmp", "x")), False, strict=False)),
        ("DROP VIEW v", DropView(Name(("v",)), False)),
        ("show temporary tables", ListTempTables()),
        ("SHOW TEMP TABLES;", ListTempTables()),
        ("INSERT OVERWRITE TABLE t SELECT 1", InsertInto(Name(("t",)), True, plain_sql("SELECT 1"))),
        ("insert into db.t values (1)", InsertInto(Name(("db", "t")), query=plain_sql("values (1)"))),
        ("INSERT INTO t (SELECT 1)", InsertInto(Name(("t",)), query=plain_sql("(SELECT 1)"))),
        ("INSERT INTO t (a, `b c`) SELECT 1, 2",
         InsertInto(Name(("t",)), query=plain_sql("SELECT 1, 2"), columns=("a", "b c"))),
        ("INSERT INTO t (a.b) SELECT 1", InsertInto(Name(("t",)), clause="a column list")),
        ("INSERT INTO t PARTITION (k = 1) SELECT 1",
         InsertInto(Name(("t",)), clause="a PARTITION clause",
                    partition_rows=plain_sql("SELECT 1"))),
        ("INSERT OVERWRITE t PARTITION (k = 1, j) IF NOT EXISTS VALUES (1, 2);",
         InsertInto(Name(("t",)), overwrite=True, clause="a PARTITION clause",
                    partition_rows=plain_sql("VALUES (1, 2)"))),
        ("INSERT INTO t PARTITION k = 1 SELECT 1",
         InsertInto(Name(("t",)), clause="a PARTITION clause")),
        ("INSERT INTO t BY NAME SELECT 1 AS a", InsertInto(Name(("t",)), clause="BY NAME")),
        ("INSERT INTO t REPLACE WHERE a = 1 SELECT 1",
         InsertInto(Name(("t",)), clause="a REPLACE clause")),
        ("INSERT INTO t", InsertInto(Name(("t",)), clause="no query")),
        ("WITH s AS (SELECT 1 AS a) INSERT OVERWRITE t SELECT a FROM s",
         InsertInto(Name(("t",)), True, plain_sql("WITH s AS (SELECT 1 AS a) SELECT a FROM s"))),
        ("FROM src s INSERT INTO TABLE t (a) SELECT s.x WHERE s.x > 1",
         InsertInto(Name(("t",)), query=plain_sql("FROM src s SELECT s.x WHERE s.x > 1"),
                    columns=("a",))),
        ("FROM src INSERT INTO t SELECT x INSERT INTO u SELECT y",
         InsertInto(Name(("t",)), clause="several targets", others=(Name(("u",)),))),
        ("WITH s AS (SELECT 1) INSERT INTO t WITH r AS (SELECT 2) SELECT * FROM r;",
         InsertInto(Name(("t",)), query=plain_sql(
             "WITH s AS (SELECT 1) SELECT * FROM (WITH r AS (SELECT 2) SELECT * FROM r\n)"))),
        ("WITH s AS (SELECT 1) INSERT INTO t WITH r AS (SELECT ';') SELECT * FROM r ; -- done",
         InsertInto(Name(("t",)), query=plain_sql(
             "WITH s AS (SELECT 1) SELECT * FROM (WITH r AS (SELECT ';') SELECT * FROM r \n)"))),
        ("WITH s AS (SELECT 1) INSERT INTO t WITH r AS (SELECT 2) SELECT * FROM r;; ;",
         InsertInto(Name(("t",)), query=plain_sql(
             "WITH s AS (SELECT 1) SELECT * FROM (WITH r AS (SELECT 2) SELECT * FROM r\n)"))),
        ("WITH s AS (SELECT 1) INSERT INTO t WITH r AS (SELECT 2) SELECT 'a' ';'",
         InsertInto(Name(("t",)), query=plain_sql(
             "WITH s AS (SELECT 1) SELECT * FROM (WITH r AS (SELECT 2) SELECT 'a' ';'\n)"))),
        ("WITH s AS (SELECT 1) INSERT INTO t WITH r AS (SELECT 2) SELECT `;` FROM r",
         InsertInto(Name(("t",)), query=plain_sql(
             "WITH s AS (SELECT 1) SELECT * FROM (WITH r AS (SELECT 2) SELECT `;` FROM r\n)"))),
        ("WITH s AS (SELECT 1) INSERT INTO t WITH r AS (SELECT 2) SELECT * FROM r -- done",
         InsertInto(Name(("t",)), query=plain_sql(
             "WITH s AS (SELECT 1) SELECT * FROM (WITH r AS (SELECT 2) SELECT * FROM r -- done\n)"))),
        ("CREATE OR REPLACE TEMP VIEW v AS SELECT 1", CreateTempView(Name(("v",)))),
        (
            "CREATE VIEW default.v AS SELECT * FROM t JOIN (SELECT 1) s JOIN db.u ON true",
            CreatePersistentView(Name(("default", "v")), (Name(("t",)), Name(("db", "u")))),
        ),
        ("ALTER VIEW v AS SELECT 1", AlterView(Name(("v",)), "ALTER VIEW")),
        ("alter table t rename to u", AlterView(Name(("t",)), "ALTER TABLE")),
    ],
)
def test_other_statements(sql: str, expected: object) -> None:
    assert parse(sql) == expected


@pytest.mark.parametrize(
    ("sql", "rest"),
    [
        ("DROP TABLE t; DROP TABLE other", "; DROP TABLE other"),
        ("DROP TABLE t xyz", "xyz"),
        ("DROP TABLE t, u", ", u"),
        ("DROP TABLE t -- only a comment", ""),
        ("DROP TABLE t /* c */ ;", ""),
    ],
)
def test_what_follows_a_drop_is_kept_to_be_named(sql: str, rest: str) -> None:
    found = parse(sql)
    assert isinstance(found, DropTempTable)
    assert found.rest == rest


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("CREATE TEMP TABLE t (a, ) AS SELECT 1", r"expected column names at \[\)\]"),
        ("CREATE TEMP TABLE t USING AS SELECT 1", r"expected a format name"),
        ("CREATE TEMP TABLE t USING csv USING json AS SELECT 1", r"USING given twice"),
        ("CREATE TEMP TABLE t STORED AS parquet AS SELECT 1", r"expected USING, PARTITIONED BY"),
        ("CREATE TEMP TABLE t AS ", r"a query must follow AS"),
        ("CREATE TEMP TABLE t () USING csv", r"expected column names at \[\)\]"),
        ("CREATE TEMP TABLE t (a INT) USING csv; SELECT 1",
         r"expected USING, PARTITIONED BY, OPTIONS or AS at \[;\]"),
        ("DROP TABLE IDENTIFIER(name)", r"as a string literal in IDENTIFIER"),
    ],
)
def test_malformed_statements_are_clear_errors_with_a_position(sql: str, message: str) -> None:
    with pytest.raises(TempTableError, match=message):
        parse(sql)


@pytest.mark.parametrize(
    ("sql", "keyword"),
    [
        ("  select 1", "SELECT"),
        ("-- c\n/* a /* nested */ b */ Drop table t", "DROP"),
        ("/* never closed", ""),
        ("(SELECT 1)", ""),
        (" " * 10_000 + "CREATE", ""),
    ],
)
def test_the_first_keyword_is_found_after_comments_within_a_bounded_prefix(
    sql: str, keyword: str
) -> None:
    assert first_keyword(sql) == keyword


def test_a_huge_statement_is_recognised_from_a_bounded_head(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tokenized: list[int] = []
    real = statements._tokens

    def counting(text: str, *, complete: bool) -> list[object]:
        tokenized.append(len(text))
        return real(text, complete=complete)  # type: ignore[return-value]

    monkeypatch.setattr(statements, "_tokens", counting)
    tail = " +1" * 1_000_000
    found = parse("CREATE TEMPORARY TABLE t AS SELECT 1 AS x" + tail)
    assert isinstance(found, CreateTempTable)
    assert found.input.sql.query == "SELECT 1 AS x" + tail
    assert max(tokenized) <= statements.WINDOWS[0]

    tokenized.clear()
    dropped = parse("DROP TABLE t" + tail)
    assert isinstance(dropped, DropTempTable)
    assert dropped.rest.startswith("+1 +1")
    assert max(tokenized) <= statements.WINDOWS[0]

    tokenized.clear()
    view = parse("CREATE VIEW default.v AS SELECT 1 AS x" + tail + " FROM t")
    assert isinstance(view, CreatePersistentView)
    assert view.sources == (), "a source past the tokenized bound is Spark's to check"
    assert max(tokenized) <= MAX_TOKENIZED_CHARS

    tokenized.clear()
    lead = "WITH s AS (SELECT 1) INSERT INTO t WITH r AS (SELECT 2) SELECT 1"
    inserted = parse(lead + tail + " ; ;")
    assert isinstance(inserted, InsertInto)
    assert inserted.query.sql.query == (
        f"WITH s AS (SELECT 1) SELECT * FROM (WITH r AS (SELECT 2) SELECT 1{tail}\n)"
    )
    assert max(tokenized) <= MAX_TOKENIZED_CHARS


def test_a_cttas_head_longer_than_the_bound_is_an_error_naming_the_bound() -> None:
    options = ", ".join(f"k{i} 'v'" for i in range(MAX_TOKENIZED_CHARS // 6))
    with pytest.raises(TempTableError, match=f"within its first {MAX_TOKENIZED_CHARS} characters"):
        parse(f"CREATE TEMP TABLE t OPTIONS ({options}) AS SELECT 1")


@pytest.mark.parametrize(
    ("condition", "column"),
    [
        ("t.id = s.id", "id"),
        ("s.id == t.id AND s.v > 1", "id"),
        ("f(a AND b) AND `t`.`my id` = s.x", "my id"),
        ("x > 1 AND t.k = s.k AND y", "k"),
        ("t.nothing = s.id AND t.k = s.k", "k"),
        ("T.id = s.id", None),
        ("t.ID = s.id", None),
        ("t.id <=> s.id", None),
        ("t.id = s.id OR s.v > 1", None),
        ("CASE WHEN a AND t.id = s.id AND b THEN TRUE END", None),
        ("s.v BETWEEN 1 AND t.id = s.id", None),
        ("t.id = s.id IS NULL", None),
        ("(t.id = s.id)", None),
        ("t.id + 1 = s.id", None),
        ("u.id = s.id", None),
        ("s.id <=> t.id -- NULL ids match \\\nAND t.k = s.k", None),
        ("s.id <=> t.id /* c */ AND t.k = s.k", None),
        ("t.k = s.k AND ${p}", None),
        ("t.id = s.id AND " + "x = 1 AND " * 300 + "TRUE", None),
    ],
)
def test_a_condition_compares_a_column_of_a_qualifier_only_in_a_conjunct_of_its_own(
    condition: str, column: str | None
) -> None:
    """``compared_column`` finds ``t.c = x.y`` only where the condition is its conjunction,
    so that the condition is false wherever that column is NULL, and only for a column of
    the table named as the table names it; anything else (a null-safe comparison, an OR, ANDs
    of a CASE or BETWEEN, comments, which Spark may read further than sqlglot, a ``${var}``
    Spark substitutes first, a text past the bound) finds none."""
    assert statements.compared_column(condition, "t", ("id", "k", "my id")) == column
