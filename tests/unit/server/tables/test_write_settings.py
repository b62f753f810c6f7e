"""Which session settings refuse which writes of a parquet temp table, by Spark version.

The settings and the version are what a Spark server answers to Config and
AnalyzePlan; the integration tests (``test_session_write_settings.py``) show
what each setting does to the files on Spark 4.3, where the table's own
option wins over the session. These hold the rule for the servers where it
does not (4.0 and 4.1), which the suite's server is not.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import pytest
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.types import (
    ArrayType,
    DateType,
    IntegerType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from connect_plugin.errors import ValueNotHeld
from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.tables.write_settings import (
    DATETIME_REBASE,
    INT96_REBASE,
    TIMESTAMP_TYPE,
    refuse_changing_settings,
)
from connect_plugin.server.transport.upstream import UpstreamSession


class Answers:
    """A Spark server's answers to the two questions the rule asks."""

    def __init__(self, version: str, settings: dict[str, str]) -> None:
        self.version = version
        self.settings = settings
        self.asked_version = 0

    async def config(self, keys: Sequence[str]) -> dict[str, str | None]:
        return {key: self.settings.get(key) for key in keys}

    async def analyze(
        self, request: spark_proto.AnalyzePlanRequest
    ) -> spark_proto.AnalyzePlanResponse:
        assert request.HasField("spark_version")
        self.asked_version += 1
        response = spark_proto.AnalyzePlanResponse()
        response.spark_version.version = self.version
        return response


def table(schema: StructType, fmt: str = "parquet", partition: tuple[str, ...] = ()) -> TempTable:
    return TempTable(
        name="T",
        location=Path("/nowhere"),
        format=fmt,
        schema_json=schema.json(),
        partition_columns=partition,
        options={},
        rows=0,
        created=datetime.datetime.now(datetime.timezone.utc),
    )


def refusal(answers: Answers, written: TempTable, *, by_spark: bool) -> str | None:
    upstream = cast(UpstreamSession, answers)
    try:
        asyncio.run(refuse_changing_settings(upstream, written, by_spark=by_spark))
    except ValueNotHeld as exc:
        return str(exc)
    return None


NESTED = StructType([
    StructField("id", IntegerType()),
    StructField("m", MapType(StringType(), ArrayType(TimestampType()))),
])  # fmt: skip
DATED = StructType([StructField("id", IntegerType()), StructField("d", DateType())])
LOCAL = StructType([StructField("id", IntegerType()), StructField("n", TimestampNTZType())])


@pytest.mark.parametrize(
    ("version", "by_spark", "refused"),
    [("4.3.0", False, False), ("4.2.1", False, False), ("4.1.1", False, True),
     ("4.0.0", False, True), ("4.3.0", True, True), ("4.0.0", True, True)],
)  # fmt: skip
def test_milliseconds_refuse_what_spark_writes_with_the_sessions_type(
    version: str, by_spark: bool, refused: bool
) -> None:
    answers = Answers(version, {TIMESTAMP_TYPE: "timestamp_millis"})
    found = refusal(answers, table(NESTED), by_spark=by_spark)
    assert (found is not None) == refused
    if found is not None:
        assert "Temporary table [T]: column [m] holds timestamps" in found
        assert f'spark.conf.unset("{TIMESTAMP_TYPE}")' in found


def test_settings_that_change_no_value_of_the_table_refuse_nothing() -> None:
    millis = Answers("4.0.0", {TIMESTAMP_TYPE: "TIMESTAMP_MILLIS", DATETIME_REBASE: "LEGACY"})
    assert refusal(millis, table(LOCAL), by_spark=True) is None
    assert refusal(millis, table(DATED, fmt="orc"), by_spark=True) is None
    assert refusal(millis, table(DATED, partition=("d",)), by_spark=True) is None
    assert millis.asked_version == 0


def test_the_julian_calendar_refuses_dates_always_and_timestamps_as_written() -> None:
    legacy = Answers("4.3.0", {DATETIME_REBASE: "LEGACY"})
    assert "column [d] holds dates" in (refusal(legacy, table(DATED), by_spark=False) or "")
    assert refusal(legacy, table(NESTED), by_spark=True) is None
    assert "column [m]" in (refusal(legacy, table(NESTED), by_spark=False) or "")
    int96 = Answers("4.3.0", {INT96_REBASE: "LEGACY"})
    assert refusal(int96, table(NESTED), by_spark=False) is None
    assert INT96_REBASE in (refusal(int96, table(NESTED), by_spark=True) or "")
    int96.settings[TIMESTAMP_TYPE] = "TIMESTAMP_MICROS"
    assert refusal(int96, table(NESTED), by_spark=True) is None
