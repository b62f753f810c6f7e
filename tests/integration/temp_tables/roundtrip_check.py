"""Checking one random table in every temp-table format: exact values, or a clean refusal.

See ``test_roundtrip_property`` for the property; ``Tally`` counts what a
run did, for the session's summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors.exceptions.base import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StringType, StructType

import connect_plugin
from connect_plugin.server.gateway import Gateway
from tests.integration.support import table_folders, temp_table_names
from tests.integration.temp_tables import duckdb_reads
from tests.integration.temp_tables.roundtrip_data import (
    WRITE_SETTINGS,
    ZONES,
    Table,
    exact_rows,
    expected_refusal,
    settings_refusal,
)

DEFAULT_SECONDS = 20.0
"""The property's seconds unless ``--roundtrip-seconds`` says otherwise."""
STATS = pytest.StashKey[list["Tally"]]()

FORMATS = ("parquet", "orc", "json", "csv")
SOURCE = "roundtrip_source"


@dataclass
class Tally:
    test: str
    examples: int = 0
    seconds: float = 0.0
    written: dict[str, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=list)
    """The first and the last hypothesis seed of a random run."""

    def line(self) -> str:
        def shown(counts: dict[str, int]) -> str:
            return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"

        seeds = f"; seeds {self.seeds[0]} to {self.seeds[1]} (--roundtrip-seed)" if self.seeds else ""
        return (
            f"{self.test}: {self.examples} tables in {self.seconds:.1f} s; written: "
            f"{shown(self.written)}; refused: {shown(self.refused)}{seeds}"
        )


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def arrow_rows(frame: DataFrame) -> list[dict[str, Any]]:
    """The rows Spark sent, from its Arrow batches as they came: pyspark's ``toArrow`` casts
    them to a schema of its own first, which fails on a null variant inside a list."""
    table, _ = frame._to_table()  # type: ignore[attr-defined]
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def session_of(gateway: Gateway, spark: SparkSession) -> Any:
    assert gateway.sessions is not None
    (session,) = [
        s for s in gateway.sessions.sessions() if s.session_id == spark.client._session_id
    ]
    return session


class RoundTrip:
    """Writes one random table in every format and checks what comes back."""

    def __init__(
        self, spark: SparkSession, gateway: Gateway, workspace: Path, tally: Tally
    ) -> None:
        self.spark = spark
        self.gateway = gateway
        self.workspace = workspace
        self.tally = tally

    def check(self, table: Table, *, via_sql: bool, insert: bool) -> None:
        for fmt in (*FORMATS, "text"):
            self.spark.sql(f"DROP TABLE IF EXISTS roundtrip_{fmt}").collect()
        self.spark.conf.set("spark.sql.session.timeZone", table.zone)
        for settings in WRITE_SETTINGS:
            for key, _ in settings:
                self.spark.conf.unset(key)
        for key, value in table.settings:
            self.spark.conf.set(key, value)
        source = self.spark.createDataFrame(table.rows, table.schema)
        source.createOrReplaceTempView(SOURCE)
        for fmt in FORMATS:
            self._one(table, source, fmt, via_sql=via_sql, insert=insert)
        self._text(table, source, keep_nulls=via_sql)
        self.tally.examples += 1

    def _create(
        self, table: Table, source: DataFrame, fmt: str, name: str, *, via_sql: bool
    ) -> PySparkException | None:
        """CTTAS of ``source`` as ``name``; the error when it was refused."""
        partition = [table.partition] if table.partition else []
        try:
            if via_sql:
                clause = f"PARTITIONED BY ({quoted(table.partition)})" if table.partition else ""
                self.spark.sql(
                    f"CREATE TEMPORARY TABLE {name} USING {fmt} {clause} AS SELECT * FROM {SOURCE}"
                ).collect()
            else:
                connect_plugin.create_temp_table(source, name, format=fmt, partition_by=partition)
        except PySparkException as exc:
            return exc
        return None

    def _refused(self, fmt: str, name: str, refusal: tuple[str, str] | None, error: Exception) -> None:
        assert refusal is not None, f"{fmt} refused a table it holds: {error}"
        assert f"[{refusal[0]}]" in str(error), f"{fmt}: {refusal} expected, got {error}"
        assert name not in temp_table_names(self.spark)
        assert table_folders(self.workspace, self.spark) == []
        self.tally.refused[fmt] = self.tally.refused.get(fmt, 0) + 1

    def _one(
        self, table: Table, source: DataFrame, fmt: str, *, via_sql: bool, insert: bool
    ) -> None:
        spark, name = self.spark, f"roundtrip_{fmt}"
        order = [f for f in table.schema.fields if f.name != table.partition]
        order += [f for f in table.schema.fields if f.name == table.partition]
        stored = StructType(order)
        refusal = expected_refusal(fmt, table)
        error = self._create(table, source, fmt, name, via_sql=via_sql)
        if error is not None:
            self._refused(fmt, name, refusal, error)
            return
        assert refusal is None, f"{fmt} took a table it cannot hold: {refusal}"
        self.tally.written[fmt] = self.tally.written.get(fmt, 0) + 1
        columns = [quoted(f.name) for f in order]
        expected = exact_rows(arrow_rows(source.select(*columns)), stored)
        other = ZONES[(ZONES.index(table.zone) + 1) % len(ZONES)]
        spark.conf.set("spark.sql.session.timeZone", other)
        read = spark.table(name)
        assert [(f.name, f.dataType) for f in read.schema.fields] == [
            (f.name, f.dataType) for f in stored.fields
        ]
        assert_same(fmt, exact_rows(arrow_rows(read), stored), expected)
        listing = spark.sql("SHOW TEMPORARY TABLES").collect()
        assert [r["rows"] for r in listing if r["name"] == name] == [len(table.rows)]
        assert read.count() == len(table.rows)
        self._second_opinion(table, fmt, name, stored, expected)
        if insert:
            self._insert(table, fmt, name, columns, stored, expected)
        spark.sql(f"DROP TABLE {name}")

    def _insert(
        self,
        table: Table,
        fmt: str,
        name: str,
        columns: list[str],
        stored: StructType,
        expected: list[list[Any]],
    ) -> None:
        """INSERT the rows again: twice as many read back, or a refusal for a setting of the
        session that would change them, which leaves the table as it was."""
        spark = self.spark
        refusal = settings_refusal(fmt, table, by_spark=True)
        error: PySparkException | None = None
        try:
            spark.sql(f"INSERT INTO {name} SELECT {', '.join(columns)} FROM {SOURCE}")
        except PySparkException as exc:
            error = exc
        if error is not None:
            assert refusal is not None, f"{fmt} refused an INSERT it holds: {error}"
            assert f"[{refusal[0]}]" in str(error), error
            assert refusal[1] in str(error), error
            assert_same(fmt, exact_rows(arrow_rows(spark.table(name)), stored), expected)
            return
        assert refusal is None, f"{fmt} took an INSERT the session would change: {refusal}"
        doubled = sorted(expected * 2, key=lambda r: (r[0], repr(r)))
        assert_same(fmt, exact_rows(arrow_rows(spark.table(name)), stored), doubled)

    def _second_opinion(
        self, table: Table, fmt: str, name: str, stored: StructType, expected: list[list[Any]]
    ) -> None:
        if fmt not in ("parquet", "csv"):
            return
        (folder,) = table_folders(self.workspace, self.spark)
        keep = duckdb_reads.compared(stored, table.partition)
        data = StructType([stored.fields[i] for i in keep])
        wanted = sorted(([row[i] for i in keep] for row in expected), key=lambda r: (r[0], repr(r)))
        if fmt == "parquet":
            assert_same("parquet read by DuckDB", duckdb_reads.parquet_rows(folder, data), wanted)
            return
        options = session_of(self.gateway, self.spark).tables[name].options
        assert_same("csv read by DuckDB", duckdb_reads.csv_rows(folder, data, options), wanted)

    def _text(self, table: Table, source: DataFrame, *, keep_nulls: bool) -> None:
        """The first string data column alone, as a text table (one string column); without
        its NULLs half the time, since text refuses them."""
        strings = [
            i for i, f in enumerate(table.schema.fields)
            if isinstance(f.dataType, StringType) and f.name != table.partition
        ]  # fmt: skip
        if not strings:
            return
        column = table.schema.fields[strings[0]].name
        values = [row[strings[0]] for row in table.rows]
        only = source.select(quoted(column))
        if not keep_nulls:
            values = [v for v in values if v is not None]
            only = only.where(f"{quoted(column)} IS NOT NULL")
        refusal = None
        if any(v is None or "\n" in v or "\r" in v for v in values):
            refusal = (column, "NULL or a line break")
        error = None
        try:
            connect_plugin.create_temp_table(only, "roundtrip_text", format="text")
        except PySparkException as exc:
            error = exc
        if error is not None:
            self._refused("text", "roundtrip_text", refusal, error)
            return
        assert refusal is None, f"text took {values!r}"
        self.tally.written["text"] = self.tally.written.get("text", 0) + 1
        read = sorted(r[0] for r in self.spark.table("roundtrip_text").collect())
        assert read == sorted(values)
        self.spark.sql("DROP TABLE roundtrip_text")


def assert_same(what: str, read: list[list[Any]], expected: list[list[Any]]) -> None:
    """``read`` is ``expected``; else the first row that differs, both ways."""
    if read == expected:
        return
    for got, wanted in zip(read, expected, strict=False):
        assert got == wanted, f"{what}: read {got!r}, expected {wanted!r}"
    raise AssertionError(f"{what}: read {len(read)} rows, expected {len(expected)}")


def roundtrip_seconds(config: pytest.Config) -> float:
    seconds: float | None = config.getoption("--roundtrip-seconds")
    return DEFAULT_SECONDS if seconds is None else seconds


def summary(config: pytest.Config) -> list[str]:
    return [tally.line() for tally in config.stash.get(STATS, [])]
