"""ScanSpec: validation with clear errors, and the JSON form it travels in."""

from __future__ import annotations

import ast
from pathlib import Path

import pyarrow as pa
import pytest

import connect_plugin.scanning
from connect_plugin.errors import InvalidScanSpec
from connect_plugin.scanning import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, ScanSpec

SCAN_PACKAGE = Path(connect_plugin.scanning.__file__).parent
SPARK_BINDING = frozenset({"spark/spark_source.py", "spark/spark_versions.py"})
"""The data source Spark runs, and what differs between the pysparks it runs on."""


def test_defaults_come_from_the_loader() -> None:
    spec = ScanSpec(["/data"], "JSON")
    assert spec.format == "json"
    assert (spec.max_rows, spec.max_bytes) == (DEFAULT_MAX_ROWS, DEFAULT_MAX_BYTES)
    assert spec.columns is None
    assert spec.is_wildcard
    assert (spec.partitioning, spec.on_error, spec.strict) == ("dirs", "fail", False)


def test_lists_become_tuples_and_star_alone_is_the_wildcard() -> None:
    spec = ScanSpec("/data/a.json", "json", columns=["*"])
    assert spec.paths == ("/data/a.json",)
    assert spec.columns is None
    mixed = ScanSpec(["/d"], "json", columns=["*", "filename"])
    assert mixed.columns == ("*", "filename")
    assert mixed.is_wildcard
    empty = ScanSpec(["/d"], "json", columns=[])
    assert empty.columns == ()
    assert not empty.is_wildcard


def test_json_round_trip_keeps_every_field_and_schema_metadata() -> None:
    schema = pa.schema(
        [
            pa.field("a", pa.int32(), nullable=False, metadata={"default": "7"}),
            pa.field("t", pa.timestamp("us", tz="UTC")),
            pa.field("m", pa.struct([("x", pa.list_(pa.string()))])),
        ]
    )
    spec = ScanSpec(
        ["/data/*.csv", "/more"],
        "csv",
        columns=["a", "columns[2]", "m.x"],
        provided_schema=schema,
        strict=True,
        partitioning="hive",
        on_error="skip",
        max_rows=100,
        max_bytes=1 << 20,
        options={"Header": "TRUE", "delimiter": ";"},
        sample_bytes=1000,
    )
    back = ScanSpec.from_json(spec.to_json())
    assert back == spec
    assert hash(back) == hash(spec)
    assert back.provided_schema is not None
    assert back.provided_schema.equals(schema, check_metadata=True)
    assert back.options == {"header": "true", "delimiter": ";"}
    assert back.has_header


def test_cache_key_ignores_limits_and_projection_only() -> None:
    base = ScanSpec(["/d"], "json")
    assert base.cache_key() == ScanSpec(["/d"], "json", max_rows=7, columns=["a"]).cache_key()
    assert base.cache_key() != ScanSpec(["/d"], "json", strict=True).cache_key()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"paths": [], "format": "json"}, "at least one path"),
        ({"paths": [""], "format": "json"}, "non-empty strings"),
        ({"paths": ["/d"], "format": "xml"}, "format must be one of json, csv, tsv"),
        ({"paths": ["/d"], "format": "json", "on_error": "ignore"}, "on_error must be one of"),
        ({"paths": ["/d"], "format": "json", "partitioning": "x"}, "partitioning must be one"),
        ({"paths": ["/d"], "format": "json", "max_rows": 0}, "max_rows must be a whole number"),
        ({"paths": ["/d"], "format": "json", "max_bytes": -1}, "max_bytes must be a positive"),
        ({"paths": ["/d"], "format": "json", "columns": ["a", "A"]}, "named twice"),
        ({"paths": ["/d"], "format": "json", "columns": "a"}, "list of column names"),
        ({"paths": ["/d"], "format": "json", "columns": ["a[x]"]}, "is malformed"),
        ({"paths": ["/d"], "format": "json", "options": {"header": "true"}}, "not an option"),
        ({"paths": ["/d"], "format": "csv", "options": {"header": "yes"}}, "true or false"),
        ({"paths": ["/d"], "format": "csv", "options": {"delimiter": "::"}}, "one character"),
        ({"paths": ["/d"], "format": "json", "strict": "yes"}, "strict must be true or false"),
        ({"paths": ["/d"], "format": "json", "provided_schema": "a int"}, "pyarrow.Schema"),
    ],
)
def test_invalid_specs_say_what_is_wrong(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidScanSpec, match=message):
        ScanSpec(**arguments)  # type: ignore[arg-type]


def test_duplicate_provided_columns_are_refused() -> None:
    schema = pa.schema([("a", pa.int64()), ("A", pa.string())])
    with pytest.raises(InvalidScanSpec, match="column 'A' twice"):
        ScanSpec(["/d"], "json", provided_schema=schema)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not valid JSON"),
        ("[]", "JSON object"),
        ('{"paths": ["/d"], "format": "json", "extra": 1}', "unknown keys"),
        ('{"paths": ["/d"], "format": "json", "version": 99}', "version 99"),
        ('{"format": "json"}', "needs 'paths' and 'format'"),
        ('{"paths": ["/d"], "format": "json", "schema": "%%%"}', "Arrow IPC schema"),
    ],
)
def test_malformed_json_is_refused(text: str, message: str) -> None:
    with pytest.raises(InvalidScanSpec, match=message):
        ScanSpec.from_json(text)


def test_the_scan_core_imports_neither_pyspark_nor_grpc() -> None:
    """Only the Spark binding may import pyspark; the core runs anywhere pyarrow does."""
    modules = {
        path.relative_to(SCAN_PACKAGE).as_posix(): path for path in SCAN_PACKAGE.rglob("*.py")
    }
    assert len(modules) > 20
    assert set(modules) >= SPARK_BINDING, "an exception names a module that is not there"
    for relative, module in sorted(modules.items()):
        if relative in SPARK_BINDING:
            continue
        tree = ast.parse(module.read_text())
        imported = {
            name.split(".")[0]
            for node in ast.walk(tree)
            for name in (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
        }
        assert not imported & {"pyspark", "grpc"}, relative
