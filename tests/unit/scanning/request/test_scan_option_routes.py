"""Every option of the table is taken alike by the three routes into a scan.

The routes are a SQL ``OPTIONS (...)`` clause (``ScanOptions.parse``), the
client's ``scan()`` keywords (which travel as a ``Scan`` message) and a
``Scan`` message another client builds (``ScanOptions.from_message``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest

from connect_plugin import proto
from connect_plugin.client.scan import scan
from connect_plugin.errors import InvalidScanSpec
from connect_plugin.scanning import Format, ScanSpec
from connect_plugin.scanning.request.options import SCAN_OPTIONS, ScanOptions

SESSION = "8f5c3c4e-0000-4000-8000-000000000002"
SCHEMA = pa.schema([("a", pa.int64())])


class Client:
    _session_id = SESSION


class Session:
    client = Client()


@dataclass(frozen=True)
class Example:
    """One option set to a value other than its default, as each route spells it."""

    keyword: Any
    text: str
    set_field: Callable[[proto.Scan], None]
    source: dict[str, str] = field(default_factory=lambda: {"path": "/d", "format": "json"})
    """The files of the scan, in SQL's spelling; the client gets the same."""
    others: dict[str, str] = field(default_factory=dict)
    """Other options the example needs, as SQL text and as keywords."""


def _files(message: proto.Scan, paths: tuple[str, ...] = ("/d",), form: str = "json") -> None:
    message.files.paths.extend(paths)
    message.files.format = form


EXAMPLES: dict[str, Example] = {
    "paths": Example(
        ["/a", "/b"],
        "/a, /b",
        lambda m: _files(m, ("/a", "/b")),
        source={"format": "json"},
    ),
    "table": Example("t", "t", lambda m: setattr(m, "table", "t"), source={}),
    "format": Example("CSV", "csv", lambda m: _files(m, form="csv"), source={"path": "/d"}),
    "columns": Example(["a", "m.b"], "a, m.b", lambda m: m.columns.extend(["a", "m.b"])),
    "schema": Example("a BIGINT", "a BIGINT", lambda m: setattr(m, "schema_ddl", "a BIGINT")),
    "strict": Example(
        True,
        "true",
        lambda m: setattr(m, "schema_policy", proto.SchemaPolicy.SCHEMA_POLICY_STRICT),
    ),
    "evolution": Example(
        "rescue", "rescue", lambda m: setattr(m, "evolution", proto.Evolution.EVOLUTION_RESCUE)
    ),
    "rescued_column": Example("_r", "_r", lambda m: setattr(m, "rescued_column", "_r")),
    "partitioning": Example(
        "hive",
        "hive",
        lambda m: setattr(m, "partitioning", proto.Partitioning.PARTITIONING_HIVE),
    ),
    "on_error": Example(
        "skip",
        "skip",
        lambda m: setattr(m, "on_error", proto.BadRecordPolicy.BAD_RECORD_POLICY_SKIP),
    ),
    "rejects_table": Example(
        "bad",
        "bad",
        lambda m: (
            setattr(m, "rejects_table", "bad"),
            setattr(m, "on_error", proto.BadRecordPolicy.BAD_RECORD_POLICY_REJECT),
        ),
        others={"on_error": "reject"},
    ),
    "compression": Example(
        "gzip", "gzip", lambda m: setattr(m, "compression", proto.Compression.COMPRESSION_GZIP)
    ),
    "missing_columns": Example(
        "error",
        "error",
        lambda m: setattr(m, "missing_columns", proto.MissingColumns.MISSING_COLUMNS_ERROR),
    ),
    "max_rows": Example(100, "100", lambda m: setattr(m.limits, "max_rows", 100)),
    "max_bytes": Example(1 << 20, str(1 << 20), lambda m: setattr(m.limits, "max_bytes", 1 << 20)),
    "sample_bytes": Example(1000, "1000", lambda m: setattr(m, "sample_bytes", 1000)),
}


def test_every_option_of_the_table_has_an_example() -> None:
    assert list(EXAMPLES) == [option.name for option in SCAN_OPTIONS]


def test_scan_takes_every_option_as_a_keyword_with_its_default() -> None:
    parameters = inspect.signature(scan).parameters
    keywords = {
        name: parameter.default
        for name, parameter in parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name != "options"
    }
    expected = {option.name: option.default for option in SCAN_OPTIONS if option.name != "paths"}
    assert keywords == expected
    assert parameters["paths"].default is None
    for option in SCAN_OPTIONS:
        assert f"        {option.name}: " in (scan.__doc__ or ""), option.name


def _by_sql(name: str, example: Example) -> ScanOptions:
    return ScanOptions.parse({**example.source, **example.others, name: example.text})


def _by_keywords(name: str, example: Example) -> ScanOptions:
    files: dict[str, Any] = {}
    if "path" in example.source:
        files["paths"] = example.source["path"]
    if "format" in example.source:
        files["format"] = example.source["format"]
    keywords = {**files, **example.others, name: example.keyword}
    paths = keywords.pop("paths", None)
    relation = scan(Session(), paths, **keywords)._plan.plan(Client())  # type: ignore[arg-type]
    message = proto.Scan()
    relation.extension.Unpack(message)
    return ScanOptions.from_message(message)


def _by_message(example: Example) -> ScanOptions:
    message = proto.Scan(session_id=SESSION, wildcard=True)
    if {"path", "format"} <= set(example.source):
        _files(message)
    example.set_field(message)
    if message.columns:
        message.wildcard = False
    if example.others.get("on_error") == "reject":
        message.on_error = proto.BadRecordPolicy.BAD_RECORD_POLICY_REJECT
    return ScanOptions.from_message(message)


def _spec(options: ScanOptions) -> ScanSpec:
    if options.table is not None:
        options = options.for_table("/w/t", Format.JSON, {})
    return options.to_spec(SCHEMA if options.schema is not None else None)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_each_option_is_taken_alike_by_sql_keywords_and_the_message(name: str) -> None:
    example = EXAMPLES[name]
    by_sql = _by_sql(name, example)
    option = next(option for option in SCAN_OPTIONS if option.name == name)
    assert getattr(by_sql, name) != option.default
    assert _by_keywords(name, example) == by_sql
    assert _by_message(example) == by_sql
    assert _spec(_by_keywords(name, example)) == _spec(by_sql)
    assert _spec(_by_message(example)) == _spec(by_sql)


def test_the_defaults_are_alike_too() -> None:
    by_sql = ScanOptions.parse({"path": "/d", "format": "json"})
    assert _by_keywords("format", Example("json", "json", _files, source={"path": "/d"})) == by_sql
    message = proto.Scan(wildcard=True)
    _files(message)
    assert ScanOptions.from_message(message) == by_sql
    assert ScanOptions.from_keywords({"paths": "/d", "format": "json"}) == by_sql


def test_sample_bytes_reaches_the_spec_from_every_route() -> None:
    example = EXAMPLES["sample_bytes"]
    for options in (
        _by_sql("sample_bytes", example),
        _by_keywords("sample_bytes", example),
        _by_message(example),
    ):
        assert _spec(options).sample_bytes == 1000


def test_the_keyword_route_names_the_option_in_its_errors() -> None:
    with pytest.raises(ValueError, match="max_rows must be a whole number, got 'many'"):
        scan(Session(), "/d", format="json", max_rows="many")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="format must be one of json, csv, tsv, parquet, text"):
        scan(Session(), "/d", format="xml")
    with pytest.raises(InvalidScanSpec, match="nope is not an option of a scan"):
        ScanOptions.from_keywords({"paths": "/d", "format": "json", "nope": 1})


def test_an_arrow_schema_travels_as_a_spark_data_type() -> None:
    given = pa.schema([("n", pa.int16())])
    relation = scan(Session(), "/d", format="json", schema=given)._plan.plan(Client())  # type: ignore[arg-type]
    message = proto.Scan()
    relation.extension.Unpack(message)
    assert message.HasField("schema")
    options = ScanOptions.from_message(message)
    assert options.schema == message.schema
    assert (
        ScanOptions.from_keywords({"paths": "/d", "format": "json", "schema": given})
        .to_spec()
        .provided_schema
        == given
    )
