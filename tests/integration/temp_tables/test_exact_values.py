"""A temp table reads back every value it was given, in every format that accepts its type.

The values are compared on the server as exact representations (microseconds
since the epoch, hex of the bytes, the bits of a double), so nothing the
client's conversion does can hide a change; rows are read back after the
session's time zone changed; INSERT goes through the same checks as CTTAS.
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

import connect_plugin

ZONES = ("UTC", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Kiritimati")

TIMESTAMPS = """
    SELECT * FROM VALUES
      (1, TIMESTAMP'2024-03-10 02:30:00.123456', TIMESTAMP_NTZ'2024-03-10 02:30:00.123456'),
      (2, TIMESTAMP'2024-11-03 01:30:00.000001', TIMESTAMP_NTZ'2024-11-03 01:30:00.999999'),
      (3, TIMESTAMP'1883-11-18 12:00:00.000007', TIMESTAMP_NTZ'1883-11-18 12:00:00.000007'),
      (4, TIMESTAMP'0001-01-01 00:00:00.000001', TIMESTAMP_NTZ'0001-01-01 00:00:00.000001'),
      (5, TIMESTAMP'9999-12-31 23:59:59.999999', TIMESTAMP_NTZ'9999-12-31 23:59:59.999999'),
      (6, timestamp_micros(-62198755200000000), timestamp_micros(-62198755200000000)::timestamp_ntz),
      (7, CAST(NULL AS TIMESTAMP), CAST(NULL AS TIMESTAMP_NTZ))
    AS t(i, ts, ntz)
"""
TIMESTAMPS_SHOWN = "i, unix_micros(ts) AS ts, CAST(ntz AS STRING) AS ntz"

STRINGS = [
    "line1\nline2",
    "cr\rlf\r\n",
    "",
    " leading and trailing  ",
    'a "quoted", delimited; value',
    '"',
    '""',
    "\\",
    '\\"',
    "back\\slash\\",
    "tab\there",
    "#not a comment",
    "\\N",
    "NULL",
    "null",
    "\u00e9\u4e2d\U0001F600\u2028\ufeff",
    "\x00\x01\x7f",
    ",",
]
SHOWN_STRINGS = "i, s IS NULL AS is_null, hex(CAST(s AS BINARY)) AS bytes"

NUMBERS = """
    SELECT * FROM VALUES
      (1, CAST('NaN' AS DOUBLE), CAST('NaN' AS FLOAT),
       CAST('12345678901234567890.123456789012345678' AS DECIMAL(38,18))),
      (2, CAST('Infinity' AS DOUBLE), CAST('-Infinity' AS FLOAT),
       CAST('-99999999999999999999.999999999999999999' AS DECIMAL(38,18))),
      (3, -0.0D, CAST(-0.0 AS FLOAT), CAST('0.000000000000000001' AS DECIMAL(38,18))),
      (4, 4.9e-324D, CAST(1.4e-45 AS FLOAT), CAST(0 AS DECIMAL(38,18))),
      (5, 1.7976931348623157e308D, CAST(3.4028235e38 AS FLOAT), NULL),
      (6, 0.1D, CAST(0.1 AS FLOAT), CAST('1.10' AS DECIMAL(38,18)))
    AS t(i, d, f, dec)
"""
NUMBERS_SHOWN = "i, CAST(d AS STRING) AS d, CAST(f AS STRING) AS f, CAST(dec AS STRING) AS dec"
"""Java's shortest decimal form of a double or float reads back as the same bits, and shows
-0.0 and NaN apart."""

TEXT_FORMATS = ("json", "csv")
TYPED_FORMATS = ("parquet", "orc", "json", "csv")


def shown(spark: SparkSession, source: str, columns: str) -> list[tuple[object, ...]]:
    """Rows of ``source`` (a table name or a query) as exact, comparable values."""
    if source.lstrip().upper().startswith("SELECT"):
        source = f"({source})"
    rows = spark.sql(f"SELECT {columns} FROM {source} ORDER BY i").collect()
    return [tuple(r) for r in rows]


def strings_query() -> str:
    values = ", ".join(
        f"({i}, unhex('{s.encode().hex()}'))" for i, s in enumerate(STRINGS, start=1)
    )
    return (
        f"SELECT i, CAST(b AS STRING) AS s FROM VALUES {values}, ({len(STRINGS) + 1}, NULL) "
        "AS t(i, b)"
    )


def listed_rows(spark: SparkSession, name: str) -> int:
    (row,) = [r for r in spark.sql("SHOW TEMPORARY TABLES").collect() if r["name"] == name]
    rows = row["rows"]
    assert isinstance(rows, int)
    return rows


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
@pytest.mark.parametrize("zone", ZONES)
def test_timestamps_keep_their_microseconds_in_any_time_zone(
    spark: SparkSession, fmt: str, zone: str
) -> None:
    spark.conf.set("spark.sql.session.timeZone", zone)
    expected = shown(spark, TIMESTAMPS, TIMESTAMPS_SHOWN)
    spark.sql(f"CREATE TEMPORARY TABLE ts USING {fmt} AS {TIMESTAMPS}")
    spark.sql(f"INSERT INTO ts SELECT i + 100, ts, ntz FROM ({TIMESTAMPS})")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo" if zone == "UTC" else "UTC")
    read = shown(spark, "ts", TIMESTAMPS_SHOWN)
    assert read[: len(expected)] == expected
    assert [(i - 100, *rest) for i, *rest in read[len(expected) :]] == expected


@pytest.mark.parametrize("fmt", ["parquet", "orc", "json", "csv", "text"])
def test_partition_values_of_timestamps_survive_a_time_zone_change(
    spark: SparkSession, fmt: str
) -> None:
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    value = "CAST(i AS STRING) AS v" if fmt == "text" else "i AS v"
    query = f"SELECT {value}, ts AS p, i FROM ({TIMESTAMPS}) WHERE ts IS NOT NULL"
    expected = shown(spark, query, "i, unix_micros(p)")
    spark.sql(
        f"CREATE TEMPORARY TABLE tp USING {fmt} PARTITIONED BY (p, i) AS {query}"
    )
    spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
    assert shown(spark, "tp", "i, unix_micros(p)") == expected


@pytest.mark.parametrize("fmt", ["parquet", "orc", "json", "csv", "text"])
def test_strings_with_line_breaks_quotes_delimiters_and_empty_ones_read_back_exactly(
    spark: SparkSession, fmt: str
) -> None:
    query = strings_query()
    if fmt == "text":
        query = f"SELECT s FROM ({query}) WHERE s IS NOT NULL AND NOT s RLIKE '[\\r\\n]'"
        spark.sql(f"CREATE TEMPORARY TABLE s USING text AS {query}")
        expected = sorted(r.s for r in spark.sql(query).collect())
        assert sorted(r.s for r in spark.table("s").collect()) == expected
        assert spark.table("s").count() == len(expected) == listed_rows(spark, "s")
        return
    expected = shown(spark, query, SHOWN_STRINGS)
    (created,) = spark.sql(f"CREATE TEMPORARY TABLE s USING {fmt} AS {query}").collect()
    assert shown(spark, "s", SHOWN_STRINGS) == expected
    assert created.rows_written == spark.table("s").count() == listed_rows(spark, "s")
    spark.sql(f"INSERT INTO s SELECT i + 100, s FROM ({query})")
    assert spark.table("s").count() == 2 * len(expected)
    again = shown(spark, "(SELECT i - 100 AS i, s FROM s WHERE i > 100)", SHOWN_STRINGS)
    assert again == expected


def test_csv_tells_an_empty_string_from_null_even_alone_on_a_line(spark: SparkSession) -> None:
    spark.sql("CREATE TEMPORARY TABLE e USING csv AS SELECT * FROM VALUES (''), (NULL) AS t(s)")
    assert sorted(spark.table("e").collect(), key=lambda r: r.s is None) == [("",), (None,)]
    assert spark.table("e").count() == 2 == listed_rows(spark, "e")


def test_csv_with_a_header_and_another_separator_keeps_values(spark: SparkSession) -> None:
    query = strings_query()
    spark.sql(
        f"CREATE TEMPORARY TABLE h USING csv OPTIONS (header 'true', sep '|') AS {query}"
    )
    assert shown(spark, "h", SHOWN_STRINGS) == shown(spark, query, SHOWN_STRINGS)


LONGEST = 9_223_372_036_854_775_807
EARLIEST = {
    "parquet": (-LONGEST - 1, -2_147_483_648),
    "orc": (-9_223_181_856_000_000_000, -2_147_439_564),
    "json": (-9_223_372_036_854_000_000, -2_147_483_648),
    "csv": (-9_223_372_036_854_000_000, -2_147_483_648),
}
"""The earliest timestamp (microseconds) and date (days since 1970) each format holds; the
ones before are refused (test_refused_values)."""
NEAR_EPOCH = (-1_000_001, -1_000_000, -999_999, -999_001, 0, 1, 999, 1000, 999_999, 1_000_000)
"""Microseconds around the epoch that every format holds; orc refuses -999000 to -1."""
LAST_SECOND = (-999_000, -500_000, -1000, -999, -1)


def time_edges(fmt: str) -> str:
    """A row per value at the epoch or an end of its type's range, for every time type."""
    earliest_micros, earliest_day = EARLIEST[fmt]
    micros = [earliest_micros, -62_135_596_800_000_001, -62_135_596_800_000_000, *NEAR_EPOCH]
    micros += [253_402_300_799_999_999, 253_402_300_800_000_000, LONGEST]
    if fmt != "orc":
        micros += LAST_SECOND
    local = [-LONGEST, *NEAR_EPOCH, *LAST_SECOND, LONGEST]
    days = [earliest_day, -719_163, -719_162, -1, 0, 1, 2_932_896, 2_932_897, 2_147_483_647]
    times = ["00:00:00", "00:00:00.000001", "23:59:59.999999"]
    day_time = [-LONGEST, -86_400_000_001, -1, 0, 1, LONGEST]
    months = [-2_147_483_648, -13, -1, 0, 1, 2_147_483_647]
    columns = {
        "ts": [f"timestamp_micros(CAST('{m}' AS BIGINT))" for m in micros],
        "ntz": [f"TIMESTAMP_NTZ'1970-01-01' + {microseconds(m)}" for m in local],
        "d": [f"date_add(DATE'1970-01-01', {d})" for d in days],
        "tm": [f"TIME'{t}'" for t in times],
        "dt": [microseconds(m) for m in day_time],
        "ym": [f"make_ym_interval(0, {m})" for m in months],
    }
    rows = max(len(values) for values in columns.values())
    selects = []
    for i in range(rows):
        values = [v[i] if i < len(v) else "NULL" for v in columns.values()]
        selects.append(
            f"SELECT {i} AS i, "
            + ", ".join(f"{v} AS {c}" for v, c in zip(values, columns, strict=True))
        )
    return " UNION ALL ".join(selects)


def microseconds(count: int) -> str:
    return f"CAST('{count}' AS BIGINT) * INTERVAL '0.000001' SECOND"


TIME_EDGES_SHOWN = (
    "i, unix_micros(ts) AS ts, CAST(ntz AS STRING) AS ntz, unix_date(d) AS d, "
    "CAST(tm AS STRING) AS tm, CAST(dt AS STRING) AS dt, CAST(ym AS STRING) AS ym"
)


@pytest.mark.parametrize("fmt", TYPED_FORMATS)
def test_time_values_at_the_epoch_and_the_ends_of_their_range(
    spark: SparkSession, fmt: str
) -> None:
    spark.conf.set("spark.sql.timeType.enabled", "true")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    query = time_edges(fmt)
    expected = shown(spark, query, TIME_EDGES_SHOWN)
    spark.conf.set("spark.sql.session.timeZone", "America/St_Johns")
    spark.sql(f"CREATE TEMPORARY TABLE edges USING {fmt} AS {query}")
    # An INSERT writes parquet timestamps as the session says; INT96, the default, cannot
    # hold every one (test_session_write_settings.py).
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    spark.sql("INSERT INTO edges SELECT i + 100, ts, ntz, d, tm, dt, ym FROM edges")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    read = shown(spark, "edges", TIME_EDGES_SHOWN)
    assert read[: len(expected)] == expected
    assert [(i - 100, *rest) for i, *rest in read[len(expected) :]] == expected


@pytest.mark.parametrize("fmt", TYPED_FORMATS)
def test_nan_infinity_negative_zero_and_full_precision_decimals(
    spark: SparkSession, fmt: str
) -> None:
    expected = shown(spark, NUMBERS, NUMBERS_SHOWN)
    spark.sql(f"CREATE TEMPORARY TABLE n USING {fmt} AS {NUMBERS}")
    spark.sql(f"INSERT INTO n SELECT i + 100, d, f, dec FROM ({NUMBERS})")
    read = shown(spark, "n", NUMBERS_SHOWN)
    assert read[: len(expected)] == expected
    assert [(i - 100, *rest) for i, *rest in read[len(expected) :]] == expected


@pytest.mark.parametrize("fmt", ["parquet", "orc", "json"])
def test_binary_maps_and_nested_types(spark: SparkSession, fmt: str) -> None:
    keys = {"parquet": "map(2, 'b', 1, NULL)", "json": "map('1', 'a', '', NULL)"}.get(
        fmt, "CAST(NULL AS STRING)"
    )
    query = f"""
        SELECT 1 AS i, X'00FF10' AS b, {keys} AS m,
               array(named_struct('x', 1, 'y', array(X'', NULL)), NULL) AS a,
               named_struct('s', named_struct('t', TIMESTAMP'2024-03-10 02:30:00.123456'),
                            'n', CAST(NULL AS STRING)) AS st
        UNION ALL SELECT 2, NULL, NULL, array(), NULL
    """
    columns = "i, to_json(named_struct('b', hex(b), 'm', m, 'a', a, 'st', st)) AS j"
    expected = shown(spark, query, columns)
    spark.sql(f"CREATE TEMPORARY TABLE nested USING {fmt} AS {query}")
    assert shown(spark, "nested", columns) == expected


def test_parquet_holds_variant_and_every_type_the_others_refuse(spark: SparkSession) -> None:
    query = """
        SELECT 1 AS i, parse_json('{"a": 1.5, "b": [1, "x", null]}') AS v, map(1, 'a') AS m,
               X'00FF10' AS b, NULL AS nothing, INTERVAL '3-4' YEAR TO MONTH AS ym,
               INTERVAL '1 02:03:04.000005' DAY TO SECOND AS dt,
               ST_GeomFromWKB(X'0101000000000000000000F03F0000000000000040') AS geo
    """
    columns = (
        "i, to_json(v) AS v, CAST(m AS STRING) AS m, hex(b) AS b, nothing, "
        "CAST(ym AS STRING) AS ym, CAST(dt AS STRING) AS dt, hex(ST_AsBinary(geo)) AS geo"
    )
    expected = shown(spark, query, columns)
    spark.sql(f"CREATE TEMPORARY TABLE everything USING parquet AS {query}")
    assert shown(spark, "everything", columns) == expected


@pytest.mark.parametrize("fmt", ["parquet", "orc", "json", "csv", "text"])
def test_count_rows_written_and_show_agree(spark: SparkSession, fmt: str) -> None:
    value = "s" if fmt == "text" else "s, id"
    query = (
        f"SELECT {value} FROM (SELECT id, concat('row ', id, CASE WHEN id % 3 = 0 THEN "
        "'\\n\"quoted, split\"' ELSE '' END) AS s FROM range(1000))"
    )
    if fmt == "text":
        query += " WHERE NOT s RLIKE '\\n'"
    (created,) = spark.sql(f"CREATE TEMPORARY TABLE c USING {fmt} AS {query}").collect()
    assert created.rows_written == spark.table("c").count() == listed_rows(spark, "c")
    assert created.rows_written == spark.sql(query).count()


def test_python_api_gives_the_same_exact_values(spark: SparkSession) -> None:
    frame = spark.sql(strings_query())
    connect_plugin.create_temp_table(frame, "api_csv", format="csv")
    assert shown(spark, "api_csv", SHOWN_STRINGS) == shown(spark, strings_query(), SHOWN_STRINGS)
