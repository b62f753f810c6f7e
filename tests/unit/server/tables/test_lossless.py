"""What each temp-table format holds, its options, and the value checks, without a server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    CalendarIntervalType,
    CharType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    GeographyType,
    GeometryType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    TimeType,
    VarcharType,
    VariantType,
    YearMonthIntervalType,
)

from connect_plugin.config import TEMP_TABLE_FORMATS
from connect_plugin.errors import TempTableError
from connect_plugin.server.tables.lossless import (
    NULL_MARKER_PREFIX,
    holders,
    layout,
    why_not_held,
)
from connect_plugin.server.tables.value_checks import checked, nested_predicate, rules
from connect_plugin.server.tables.zero_signs import zero_columns

TEMP_TABLES_DOC = Path(__file__).resolve().parents[4] / "docs" / "temp-tables.md"
DOC_TYPES: dict[str, DataType] = {
    "boolean": BooleanType(), "tinyint": ByteType(), "smallint": ShortType(),
    "int": IntegerType(), "bigint": LongType(), "float": FloatType(), "double": DoubleType(),
    "decimal(38,18)": DecimalType(38, 18), "string": StringType(), "char": CharType(3),
    "varchar": VarcharType(3), "binary": BinaryType(), "date": DateType(),
    "timestamp": TimestampType(), "timestamp_ntz": TimestampNTZType(), "time(6)": TimeType(6),
    "interval day to second": DayTimeIntervalType(), "interval year to month":
    YearMonthIntervalType(), "void": NullType(), "array<int>": ArrayType(IntegerType()),
    "struct<a:int>": StructType([StructField("a", IntegerType())]),
    "map<string,int>": MapType(StringType(), IntegerType()),
    "map<int,string>": MapType(IntegerType(), StringType()), "variant": VariantType(),
    "geometry(0)": GeometryType(0), "geography(4326)": GeographyType(4326),
    "interval": CalendarIntervalType(),
}  # fmt: skip


def schema(**columns: DataType) -> StructType:
    return StructType([StructField(name, data_type) for name, data_type in columns.items()])


@pytest.mark.parametrize(
    ("data_type", "formats"),
    [
        (IntegerType(), ["parquet", "orc", "json", "csv"]),
        (StringType(), ["parquet", "orc", "json", "csv", "text"]),
        (BinaryType(), ["parquet", "orc", "json"]),
        (NullType(), ["parquet", "json"]),
        (VariantType(), ["parquet"]),
        (CalendarIntervalType(), []),
        (MapType(IntegerType(), StringType()), ["parquet"]),
        (MapType(StringType(), BinaryType()), ["parquet", "json"]),
        (ArrayType(StructType([StructField("m", MapType(DateType(), IntegerType()))])),
         ["parquet"]),
        (ArrayType(StructType([StructField("m", ArrayType(DateType()))])),
         ["parquet", "orc", "json"]),
    ],
)
def test_which_formats_hold_a_type(data_type: DataType, formats: list[str]) -> None:
    assert holders(data_type) == formats


def test_csv_gets_exact_options_and_a_null_marker_of_its_own() -> None:
    first = layout("t", "csv", schema(s=StringType()), (), {"header": "true", "sep": "|"})
    second = layout("t", "csv", schema(s=StringType()), (), {})
    assert first.options["multiLine"] == "true"
    assert first.options["timestampFormat"] == "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXXXX"
    assert (first.options["header"], first.options["sep"]) == ("true", "|")
    assert first.options["nullValue"].startswith(NULL_MARKER_PREFIX)
    assert first.options["nullValue"] != second.options["nullValue"]


@pytest.mark.parametrize(
    ("fmt", "options", "message"),
    [
        ("json", {"dateFormat": "MM/dd/yyyy"}, r"option \[dateFormat\] is chosen by the gateway"),
        ("csv", {"SEP": "ab"}, r"option \[SEP\] must be one character"),
        ("csv", {"sep": "\n"}, r"option \[sep\] must be one character"),
        ("parquet", {"mergeSchema": "true"}, r"parquet temp table takes: codec, compression, "
         r"maxrecordsperfile, parquet\.\*"),
    ],
)
def test_options_that_change_values_are_refused(
    fmt: str, options: dict[str, str], message: str
) -> None:
    with pytest.raises(TempTableError, match=message):
        layout("t", fmt, schema(i=IntegerType()), (), options)


def test_layout_and_gateway_options_pass() -> None:
    given = {"compression": "zstd", "parquet.page.size": "1024", "connect_plugin.x": "y"}
    assert layout("t", "parquet", schema(i=IntegerType()), (), given).options == {
        "timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        **given,
    }


def test_refusal_names_the_column_its_type_and_the_formats_that_hold_it() -> None:
    with pytest.raises(TempTableError) as refused:
        layout("t", "csv", schema(i=IntegerType(), b=BinaryType()), (), {})
    assert str(refused.value) == (
        "Temporary table [t] was not created: column [b] of type binary cannot be held exactly "
        "by csv (csv writes the bytes as text); formats that hold it: parquet, orc, json"
    )


def test_partition_columns_must_be_flat_and_not_binary() -> None:
    with pytest.raises(TempTableError, match=r"partition column \[p\] of type binary"):
        layout("t", "parquet", schema(i=IntegerType(), p=BinaryType()), ("P",), {})


def test_nested_values_are_checked_everywhere_they_can_be() -> None:
    nested = MapType(StringType(), ArrayType(StructType([StructField("a b", StringType())])))
    predicate = nested_predicate(
        "`m`", nested, lambda e, t: f"bad({e})" if t == StringType() else None
    )
    assert predicate == (
        "(exists(map_keys(`m`), __connect_plugin_v0 -> bad(__connect_plugin_v0))) OR "
        "(exists(map_values(`m`), __connect_plugin_v0 -> exists(__connect_plugin_v0, "
        "__connect_plugin_v1 -> (bad(__connect_plugin_v1.`a b`)))))"
    )
    assert nested_predicate("`i`", IntegerType(), lambda e, t: None) is None


def test_rules_follow_format_and_partitioning() -> None:
    written = schema(s=StringType(), d=DateType(), ts=TimestampType(), k=StringType())
    assert [r.column for r in rules("parquet", written, ("k",))] == ["k"]
    assert [(r.column, r.holds[:20]) for r in rules("orc", written, ())] == [
        ("d", "a date or timestamp "),
        ("d", "a date before -58775"),
        ("ts", "a date or timestamp "),
        ("ts", "a timestamp from 196"),
        ("ts", "a timestamp before -"),
    ]
    assert [r.column for r in rules("json", written, ("k",))] == ["s", "ts", "k"]


def test_each_value_a_format_cannot_hold_has_a_rule_of_its_own() -> None:
    """One rule per reason, so that the error says which; the advice names only the formats
    that hold such values."""
    late, earliest = rules("orc", schema(ts=TimestampType()), ())[1:]
    assert late.predicate("`ts`") == "unix_micros(`ts`) BETWEEN -999000 AND -1"
    assert late.advice == "use parquet, json, csv"
    assert earliest.predicate("`ts`") == "unix_micros(`ts`) < -9223181856000000000"
    assert earliest.advice == "use parquet"
    (text,) = rules("csv", schema(ts=TimestampType()), ())
    assert text.predicate("`ts`") == "unix_micros(`ts`) < -9223372036854000000"
    assert text.advice == "use parquet"
    (utf8,) = rules("json", schema(m=MapType(StringType(), IntegerType())), ())
    assert utf8.advice == "use parquet"
    assert rules("orc", schema(n=TimestampNTZType()), ()) == []
    assert [r.column for r in rules("text", schema(s=StringType()), ())] == ["s"]


def test_a_table_without_rules_is_written_as_it_came() -> None:
    relation = spark_proto.Relation()
    relation.sql.query = "SELECT 1"
    assert checked(relation, "t", []) is relation
    found = rules("text", schema(s=StringType()), ())
    wrapped = checked(relation, "t", found)
    condition = wrapped.filter.condition.unresolved_function
    assert condition.function_name == "when"
    assert condition.arguments[0].expression_string.expression.startswith("coalesce(`s` IS NULL")
    assert "holds NULL or a line break, which text" in condition.arguments[1].unresolved_function \
        .arguments[0].literal.string


def test_the_readme_table_says_what_each_format_holds() -> None:
    """Each type a format holds is "yes", with a note exactly where some of its values are
    refused (a nested type holds what its parts do)."""
    section = TEMP_TABLES_DOC.read_text().split("## What each format holds exactly")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert len(rows) >= 15
    seen = set()
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        said = [c.startswith("yes") for c in cells[1:]]
        noted = [c != "yes" for c in cells[1:]]
        for name in re.findall(r"`([^`]+)`", cells[0]):
            data_type = DOC_TYPES[name]
            held = [why_not_held(f, data_type) is None for f in TEMP_TABLE_FORMATS]
            assert said == held, f"docs/temp-tables.md says {said} for {name}, the gateway {held}"
            nested = isinstance(data_type, ArrayType | MapType | StructType)
            checked_values = [
                bool(rules(f, schema(x=data_type), ()) or zero_columns(f, schema(x=data_type), ()))
                for f in TEMP_TABLE_FORMATS
            ]
            for fmt, yes, note, checks in zip(
                TEMP_TABLE_FORMATS, said, noted, checked_values, strict=True
            ):
                assert not yes or nested or note == checks, (
                    f"docs/temp-tables.md: {name} in {fmt} "
                    + ("has a note, and no value is refused" if note else "refuses values unnoted")
                )
            seen.add(name)
    assert seen == set(DOC_TYPES)
