"""Recognising ``CREATE TEMPORARY VIEW ... USING scan OPTIONS (...)`` and reading its options."""

from __future__ import annotations

import pyarrow as pa
import pytest

from connect_plugin.errors import InvalidScanSpec, TempTableError
from connect_plugin.scanning.request.options import Evolution, Format, OnError
from connect_plugin.server.model.statements import CreateScanView, CreateTempView, Name, Statement
from connect_plugin.server.scans.scan_views import CreateScanViewHandler
from connect_plugin.server.statements.recognition import SqlText, recognise
from connect_plugin.server.tables.guards import CreateTempViewHandler
from tests.unit.server.statements.test_statements import plain_sql

RULES = [CreateScanViewHandler.parse, CreateTempViewHandler.parse]


def parse(sql: str) -> Statement | None:
    return recognise(SqlText(sql, plain_sql), RULES)


def view(sql: str) -> CreateScanView:
    request = parse(sql)
    assert isinstance(request, CreateScanView)
    return request


def test_every_spelling_of_the_head_and_the_options() -> None:
    request = view(
        """/* scan */ create OR replace TEMPORARY view `my view` -- the name
           USING Scan OPTIONS ('path' = '/d/*.json', FORMAT 'json', columns 'a, m.b, dir0',
           on_error skip, max_rows 10, s3.endpoint 'http://127.0.0.1:9000', json_format = "array");"""
    )
    assert (request.name, request.or_replace) == ("my view", True)
    options = request.options
    assert (options.paths, options.format, options.columns) == (
        ("/d/*.json",),
        Format.JSON,
        ("a", "m.b", "dir0"),
    )
    assert (options.on_error, options.max_rows) == (OnError.SKIP, 10)
    assert dict(options.reader) == {
        "s3.endpoint": "http://127.0.0.1:9000",
        "json_format": "array",
    }


def test_a_column_list_is_the_schema_and_the_only_columns() -> None:
    request = view(
        "CREATE TEMP VIEW v (a DECIMAL(10, 2), s STRUCT<x: INT>) USING scan "
        "OPTIONS (path '/d', format 'json')"
    )
    assert request.options.schema == "a DECIMAL(10, 2), s STRUCT<x: INT>"
    assert request.options.evolution is Evolution.NONE
    parsed = pa.schema([("a", pa.decimal128(10, 2)), ("s", pa.struct([("x", pa.int32())]))])
    assert request.options.to_spec(parsed).columns == ("a", "s")
    kept = view(
        "CREATE TEMP VIEW v (a INT) USING scan OPTIONS (path '/d', format 'json', "
        "evolution 'rescue')"
    )
    assert kept.options.evolution is Evolution.RESCUE


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("CREATE TEMP VIEW v AS SELECT 1", CreateTempView(Name(("v",)))),
        ("CREATE TEMP VIEW v USING json OPTIONS (path '/d')", CreateTempView(Name(("v",)))),
        ("CREATE TEMP VIEW v (a INT) USING csv OPTIONS (path '/d')", CreateTempView(Name(("v",)))),
        ("CREATE TEMP VIEW v USING `scan` OPTIONS (path '/d')", CreateTempView(Name(("v",)))),
        ("CREATE VIEW v USING scan OPTIONS (path '/d')", None),
    ],
)
def test_other_views_are_not_scans(sql: str, expected: Statement | None) -> None:
    assert parse(sql) == expected


@pytest.mark.parametrize(
    ("sql", "error", "message"),
    [
        ("CREATE TEMP VIEW db.v USING scan OPTIONS (path '/d')", TempTableError, "no database"),
        ("CREATE TEMP VIEW v USING scan", TempTableError, "needs OPTIONS"),
        (
            "CREATE TEMP VIEW v USING scan OPTIONS (path '/d', format 'json') AS SELECT 1",
            TempTableError,
            "unexpected \\[AS SELECT 1\\]",
        ),
        (
            "CREATE TEMP VIEW v USING scan OPTIONS (path '/d', format 'json', path '/e')",
            InvalidScanSpec,
            "option 'path' is given twice",
        ),
        (
            "CREATE TEMP VIEW v (a INT) USING scan OPTIONS (path '/d', format 'json', schema 'b INT')",
            InvalidScanSpec,
            "either in the column list .* or in option 'schema'",
        ),
        (
            "CREATE TEMP VIEW v (a INT) USING scan OPTIONS (path '/d', format 'json', columns 'a')",
            InvalidScanSpec,
            "either in the column list .* or in option 'columns'",
        ),
        (
            "CREATE TEMP VIEW v USING scan OPTIONS (path '/d', format 'json', nope '1')",
            InvalidScanSpec,
            "option 'nope' is not an option of a scan of json files; the options are ",
        ),
        ("CREATE TEMP VIEW v (a INT USING scan", TempTableError, "expected '\\)'"),
    ],
)
def test_malformed_statements_name_what_is_wrong(
    sql: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        parse(sql)
