"""Property: a random table, CTTAS in every format, reads back value for value, or is refused.

Random schemas (every type the client can send, nested to depth 3, nulls
everywhere) and rows, sent from the stock client in a random session time
zone and read back in another; half the tables are written while the session
has one of Spark's parquet write settings (``WRITE_SETTINGS``), which must
change no value: a write they would change is refused, naming a column. Each format either takes the table and gives
back exactly the source's values, the source's types, and one count from
CTTAS, ``count(*)`` and SHOW TEMPORARY TABLES, or refuses it naming the
column (``expected_refusal`` says which, from the values) and leaves nothing.
DuckDB reads the parquet and csv files as a second opinion; half the tables
are also written again by INSERT. The run is bounded by ``--roundtrip-seconds``
(20 by default); its hypothesis runs take seeds one after another from
``--roundtrip-seed`` (random by default, shown in the summary, where the
last is the one that failed); everything it ever found is kept in ``FINDS``
and runs every time.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    ByteType,
    DateType,
    FloatType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from tests.integration.support import first_seed
from tests.integration.temp_tables.roundtrip_check import RoundTrip, roundtrip_seconds
from tests.integration.temp_tables.roundtrip_data import (
    DATETIME_REBASE,
    INT96_REBASE,
    TIMESTAMP_TYPE,
    Table,
    tables,
)

ROUND_EXAMPLES = 4
"""Examples per hypothesis run; runs repeat until the test's seconds are spent."""


def test_random_tables_read_back_exactly_or_are_refused(
    round_trip: RoundTrip, request: pytest.FixtureRequest
) -> None:
    @settings(
        max_examples=ROUND_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(tables(), st.booleans(), st.booleans())
    def one_round(table: Table, via_sql: bool, insert: bool) -> None:
        round_trip.check(table, via_sql=via_sql, insert=insert)

    budget = roundtrip_seconds(request.config)
    seeds = round_trip.tally.seeds = [first_seed(request.config, "--roundtrip-seed")] * 2
    started = time.monotonic()
    try:
        while time.monotonic() - started < budget:
            seed(seeds[1])(one_round)()
            if time.monotonic() - started < budget:
                seeds[1] += 1
    finally:
        round_trip.tally.seconds = time.monotonic() - started


def _table(schema: StructType, rows: list[tuple[Any, ...]], partition: str | None = None,
           zone: str = "UTC", settings: tuple[tuple[str, str], ...] = ()) -> Table:  # fmt: skip
    return Table(schema, rows, partition, zone, settings)


_MICROS = datetime.datetime(2024, 6, 1, 0, 0, 0, 123456, tzinfo=datetime.timezone.utc)


FINDS: list[tuple[str, Table]] = [
    (
        "orc read a column named with a backtick back as NULL",
        _table(
            StructType([
                StructField("id", LongType(), False),
                StructField("a", BooleanType()),
                StructField("q`t", BooleanType()),
            ]),
            [(0, None, False)],
        ),
    ),
    (
        "orc gave a map's entries back sorted by key",
        _table(
            StructType([
                StructField("id", LongType(), False),
                StructField("c", MapType(ByteType(), BooleanType())),
                StructField("m", BooleanType()),
            ]),
            [(0, None, None), (1, {1: None, 0: None}, True)],
            partition="m",
        ),
    ),
    (
        "a partition value with a NUL character failed the write with Spark's Mkdirs error",
        _table(
            StructType([StructField("id", LongType(), False), StructField("c", StringType())]),
            [(0, "\x00")],
            partition="c",
        ),
    ),
    (
        "orc read a FLOAT 0.0 written after a -0.0 back as -0.0 (the two in one file, no NULL "
        "between them: ORC's reader took them for one repeated value)",
        _table(
            StructType([StructField("id", LongType(), False), StructField("f", FloatType())]),
            [(0, None), (1, -0.0), (2, 0.0)],
        ),
    ),
    (
        "parquet cut timestamps to the millisecond under outputTimestampType=TIMESTAMP_MILLIS",
        _table(
            StructType([
                StructField("id", LongType(), False),
                StructField("ts", TimestampType()),
                StructField("a", ArrayType(TimestampType())),
            ]),
            [(0, _MICROS, [_MICROS, None])],
            settings=((TIMESTAMP_TYPE, "TIMESTAMP_MILLIS"),),
        ),
    ),
    (
        "parquet wrote Julian dates under datetimeRebaseModeInWrite=LEGACY, which pyarrow and "
        "DuckDB read days off",
        _table(
            StructType([StructField("id", LongType(), False), StructField("d", DateType())]),
            [(0, datetime.date(1000, 3, 1)), (1, datetime.date(2024, 1, 1))],
            settings=((DATETIME_REBASE, "LEGACY"),),
        ),
    ),
    (
        "an INSERT wrote Julian INT96 timestamps under int96RebaseModeInWrite=LEGACY",
        _table(
            StructType([StructField("id", LongType(), False), StructField("ts", TimestampType())]),
            [(0, datetime.datetime(1000, 3, 1, 12, 0, 0, 1, tzinfo=datetime.timezone.utc))],
            settings=((INT96_REBASE, "LEGACY"),),
        ),
    ),
]
"""Tables the property found wrong once, each with what was wrong; they run every time."""


@pytest.mark.parametrize(("what", "table"), FINDS, ids=[w for w, _ in FINDS] or None)
def test_what_the_property_found_reads_back_exactly(
    round_trip: RoundTrip, what: str, table: Table
) -> None:
    started = time.monotonic()
    round_trip.check(table, via_sql=True, insert=True)
    round_trip.check(table, via_sql=False, insert=False)
    round_trip.tally.seconds = time.monotonic() - started

