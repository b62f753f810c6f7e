"""Which orc columns a write must not give zeros of both signs, and where inside them."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    FloatType,
    IntegerType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from connect_plugin.server.tables.zero_signs import places, zero_columns

NESTED = StructType([
    StructField("a", FloatType()),
    StructField("b", ArrayType(StructType([StructField("c", DoubleType())]))),
    StructField("n", IntegerType()),
])  # fmt: skip
SCHEMA = StructType([
    StructField("id", IntegerType()),
    StructField("f", FloatType()),
    StructField("s", NESTED),
    StructField("m", MapType(DoubleType(), DoubleType())),
    StructField("t", StringType()),
    StructField("p", DoubleType()),
])  # fmt: skip


def test_only_orc_data_columns_with_a_float_or_double_inside() -> None:
    assert [f.name for f in zero_columns("orc", SCHEMA, ["P"])] == ["f", "s", "m"]
    assert [f.name for f in zero_columns("orc", SCHEMA, [])] == ["f", "s", "m", "p"]
    for fmt in ("parquet", "json", "csv", "text"):
        assert zero_columns(fmt, SCHEMA, []) == []


def test_each_place_orc_stores_apart_is_tested_alone() -> None:
    """A struct's fields, an array's elements, a map's keys and its values are orc columns of
    their own: zeros of both signs in two of them are held."""
    test = "sign({})".format
    assert [p(test) for p in places("`s`", NESTED)] == [
        "sign(`s`.`a`)",
        "exists(`s`.`b`, __connect_plugin_z0 -> sign(__connect_plugin_z0.`c`))",
    ]
    assert [p(test) for p in places("`m`", SCHEMA["m"].dataType)] == [
        "exists(map_keys(`m`), __connect_plugin_z0 -> sign(__connect_plugin_z0))",
        "exists(map_values(`m`), __connect_plugin_z0 -> sign(__connect_plugin_z0))",
    ]
    nested = ArrayType(ArrayType(FloatType()))
    assert [p(test) for p in places("`x`", nested)] == [
        "exists(`x`, __connect_plugin_z0 -> exists(__connect_plugin_z0, __connect_plugin_z1 -> "
        "sign(__connect_plugin_z1)))"
    ]
