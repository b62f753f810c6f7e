"""Differential: random statement sequences on a temp table end as on a DuckDB temp table.

Each sequence (``dml_sequences``) creates a table in a random format,
declared or made by a CTAS of no rows, its column ``k`` (a partitioned
table's partition column) of a random type (a struct too), fills it, and runs INSERT, INSERT OVERWRITE, DELETE, UPDATE, MERGE
INTO, TRUNCATE, CREATE OR REPLACE and DataFrame writes through the gateway
and on DuckDB in-process; after every statement the answers (rows changed)
and the tables, row for row, must agree, read afresh and through DataFrames
made before the first statement and kept (``spark.table``, and ``scan`` of
parquet and json tables), and
SHOW TEMPORARY TABLES must count the rows. A statement that must fail (a row
that raises, a MERGE matching a row twice) must fail through the gateway
and leave the table exactly as it was, with one folder. The run is bounded
by ``--dml-seconds`` (20 by default); its hypothesis runs take seeds one
after another from ``--dml-seed`` (random by default, shown in the summary,
where the last is the one that failed); what it ever found is kept in
``FINDS`` and runs every time.
"""

from __future__ import annotations

import time
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, seed, settings
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

import connect_plugin
from connect_plugin.server.tables.overwrites import PARTITION_OVERWRITE_MODE
from tests.integration.support import first_seed, table_folders
from tests.integration.temp_tables.dml_sequences import (
    DML_RUNS,
    KEY_TYPE,
    NAMES,
    STRUCT,
    Sequence,
    Statement,
    key,
    sequences,
    shown,
)

DEFAULT_SECONDS = 20.0
EXAMPLES = 3
"""Sequences per hypothesis run; runs repeat until the test's seconds are spent."""
SCANNED_FORMATS = ("parquet", "json")
"""Formats whose tables are also read through a kept ``scan`` (it reads no orc, and csv
fields as text)."""

_TWICE = (
    "(SELECT * FROM (VALUES (5, DATE '2024-03-04', CAST(2 AS BIGINT), CAST(NULL AS STRING)), "
    "(5, DATE '2024-03-03', CAST(0 AS BIGINT), 'b')) AS src(id, k, v, s))"
)
_STRUCTS = (
    f"(SELECT * FROM (VALUES (3, CAST({key(0)} AS {KEY_TYPE}), CAST(1 AS BIGINT), 'b'), "
    f"(2, CAST({key(3)} AS {KEY_TYPE}), CAST(2 AS BIGINT), 'c')) AS src(id, k, v, s))"
)
_INSERTED = "WHEN MATCHED THEN UPDATE SET k = src.k WHEN NOT MATCHED THEN INSERT *"
FINDS: tuple[Sequence, ...] = (
    Sequence(
        fmt="csv",
        partitioned=True,
        rows=(
            "(1, CAST(0 AS INT), CAST(5 AS BIGINT), CAST('a' AS STRING))",
            "(1, CAST(NULL AS INT), CAST(NULL AS BIGINT), CAST(NULL AS STRING))",
        ),
        statements=(
            Statement(
                "MERGE INTO t USING (SELECT * FROM (VALUES (1, CAST(2 AS INT), CAST(7 AS "
                "BIGINT), CAST('b' AS STRING)), (1, CAST(3 AS INT), CAST(8 AS BIGINT), "
                "CAST(NULL AS STRING)), (4, CAST(1 AS INT), CAST(9 AS BIGINT), CAST('c' AS "
                "STRING))) AS src(id, k, v, s)) AS src ON t.id = src.id "
                "WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE THEN DELETE",
                "MERGE INTO t USING (SELECT * FROM (VALUES (1, CAST(2 AS INT), CAST(7 AS "
                "BIGINT), CAST('b' AS STRING)), (1, CAST(3 AS INT), CAST(8 AS BIGINT), "
                "CAST(NULL AS STRING)), (4, CAST(1 AS INT), CAST(9 AS BIGINT), CAST('c' AS "
                "STRING))) AS src(id, k, v, s)) AS src ON t.id = src.id "
                "WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE THEN DELETE",
            ),
            Statement(
                "UPDATE t SET k = NULL, v = v * 2 WHERE NOT (k IN (0, 1))",
                "UPDATE t SET k = NULL, v = v * 2 WHERE NOT (k IN (0, 1))",
            ),
            Statement(
                "MERGE INTO t USING (SELECT * FROM (VALUES (1, CAST(5 AS INT), CAST(1 AS "
                "BIGINT), CAST('z' AS STRING))) AS src(id, k, v, s)) AS src ON t.id = src.id "
                "WHEN MATCHED AND t.v > 6 THEN DELETE WHEN MATCHED THEN UPDATE SET *",
                "MERGE INTO t USING (SELECT * FROM (VALUES (1, CAST(5 AS INT), CAST(1 AS "
                "BIGINT), CAST('z' AS STRING))) AS src(id, k, v, s)) AS src ON t.id = src.id "
                "WHEN MATCHED AND t.v > 6 THEN DELETE WHEN MATCHED THEN UPDATE SET *",
            ),
        ),
    ),
    Sequence(
        fmt="parquet",
        partitioned=False,
        rows=("(0, CAST(NULL AS INT), CAST(NULL AS BIGINT), CAST(NULL AS STRING))",),
        statements=(
            Statement(
                "SELECT * FROM (VALUES (1, CAST(2 AS INT), CAST(3 AS BIGINT), CAST('a' AS "
                "STRING))) AS src(id, k, v, s)",
                "INSERT INTO t (id, k, v, s) VALUES (1, CAST(2 AS INT), CAST(3 AS BIGINT), "
                "CAST('a' AS STRING))",
                counts=False,
                write="insertInto",
                target="system.session.t",
            ),
        ),
    ),
    Sequence(
        fmt="parquet",
        partitioned=True,
        key="DATE",
        rows=(
            "(5, CAST(NULL AS DATE), CAST(NULL AS BIGINT), CAST(NULL AS STRING))",
            "(0, CAST(NULL AS DATE), CAST(NULL AS BIGINT), CAST(NULL AS STRING))",
        ),
        statements=(
            Statement(
                f"MERGE INTO t USING {_TWICE} AS src ON t.id = src.id WHEN MATCHED THEN DELETE "
                "WHEN NOT MATCHED BY SOURCE THEN DELETE",
                f"MERGE INTO t USING {_TWICE} AS src ON t.id = src.id WHEN MATCHED THEN DELETE "
                "WHEN NOT MATCHED BY SOURCE THEN DELETE",
                repeated=(
                    "SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM t JOIN "
                    f"{_TWICE} AS src ON t.id = src.id GROUP BY t.rowid)"
                ),
            ),
        ),
    ),
    Sequence(
        fmt="json",
        partitioned=False,
        key="TIMESTAMP",
        rows=(f"(1, CAST({key(2)} AS TIMESTAMP), CAST(4 AS BIGINT), CAST('a' AS STRING))",),
        statements=(
            Statement(f"DELETE FROM t WHERE k = {key(2)}", f"DELETE FROM t WHERE k = {key(2)}"),
        ),
    ),
    Sequence(
        fmt="parquet",
        partitioned=True,
        key="TIMESTAMP",
        rows=(f"(1, CAST({key(0)} AS TIMESTAMP), CAST(4 AS BIGINT), CAST('a' AS STRING))",),
        statements=(
            Statement(
                f"INSERT INTO t PARTITION (k = {key(3)}) VALUES (2, CAST(5 AS BIGINT), 'b')",
                f"INSERT INTO t (id, k, v, s) VALUES (2, {key(3)}, 5, 'b')",
                counts=False,
            ),
        ),
    ),
    Sequence(
        fmt="parquet",
        partitioned=False,
        key=STRUCT,
        query=True,
        rows=(
            f"(1, CAST({key(1)} AS {KEY_TYPE}), CAST(4 AS BIGINT), CAST('a' AS STRING))",
            f"(2, CAST(NULL AS {KEY_TYPE}), CAST(NULL AS BIGINT), CAST(NULL AS STRING))",
        ),
        statements=(
            Statement("UPDATE t SET v = v + 1 WHERE id = 1", "UPDATE t SET v = v + 1 WHERE id = 1"),
            Statement(f"UPDATE t SET k = {key(2)} WHERE id = 2", f"UPDATE t SET k = {key(2)} WHERE id = 2"),
            Statement(f"MERGE INTO t USING {_STRUCTS} AS src ON t.id = src.id {_INSERTED}", f"MERGE INTO t USING {_STRUCTS} AS src ON t.id = src.id {_INSERTED}"),
            Statement("DELETE FROM t WHERE id = 1", "DELETE FROM t WHERE id = 1"),
        ),
    ),
    Sequence(
        fmt="json",
        partitioned=False,
        key=STRUCT,
        query=True,
        rows=(f"(0, CAST(NULL AS {KEY_TYPE}), CAST(NULL AS BIGINT), CAST(NULL AS STRING))",),
        statements=(
            Statement(
                f"INSERT INTO t (id, k, v, s) SELECT id, k, v, s FROM t WHERE k IN ({key(0)}, {key(1)})",
                f"INSERT INTO t (id, k, v, s) SELECT id, k, v, s FROM t WHERE k IN ({key(0)}, {key(1)})",
                counts=False,
            ),
        ),
    ),
)
"""Kept examples: a partitioned csv table (its partition column stored last) through a MERGE
whose table rows match twice without a WHEN MATCHED clause (kept once), an UPDATE of the
partition column to NULL, and a MERGE whose first clause deletes; ``insertInto`` of a
``system.session.`` name, which Spark's writer looks up among catalogs only; a MERGE
deleting a row two source rows match, which counts once (DuckDB counts it twice); a kept
``scan`` of a table with a TIMESTAMP column, which failed in the gateway (its pyspark gives
a TIMESTAMP no Arrow type without a zone), and of one partitioned by a TIMESTAMP, whose
folder values (no offset) it could not read; a table made by a CTAS whose query typed
``k``'s struct field NOT NULL (``named_struct('x', 0L)``), on which every UPDATE, DELETE and
MERGE failed with Spark's ``NOT_NULL_CONSTRAINT_VIOLATION`` (issue 45); an INSERT reading a
json table through ``k IN (<struct>, <struct>)``, which Spark's json reader failed when it
pushed the filter into its parser (``spark.sql.json.filterPushdown.enabled``)."""


def dml_seconds(config: pytest.Config) -> float:
    seconds: float | None = config.getoption("--dml-seconds")
    return DEFAULT_SECONDS if seconds is None else seconds


def _rows(read: DataFrame) -> list[tuple[object, ...]]:
    """The rows of ``read``, a struct as a dict, as DuckDB gives it."""
    return sorted(
        (
            tuple(v.asDict(recursive=True) if isinstance(v, Row) else v for v in r)
            for r in read.select(*NAMES).collect()
        ),
        key=repr,
    )


def _duck_rows(duck: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return sorted(duck.sql(f"SELECT {', '.join(NAMES)} FROM t").fetchall(), key=repr)


def _listed(spark: SparkSession) -> int:
    (row,) = [r for r in spark.sql("SHOW TEMPORARY TABLES").collect() if r["name"] == "t"]
    return int(row["rows"])


def _write(spark: SparkSession, statement: Statement) -> None:
    """The DataFrame write ``statement.write`` of the rows of ``statement.spark``."""
    rows = spark.sql(statement.spark)
    name = statement.target
    writes = {
        "insertInto": lambda: _in_table_order(spark, rows, name).write.insertInto(name),
        "insertInto overwrite": lambda: _in_table_order(spark, rows, name).write.insertInto(
            name, overwrite=True
        ),
        "writeTo append": lambda: rows.writeTo(name).append(),
        "writeTo overwrite": lambda: rows.writeTo(name).overwrite(
            F.expr(statement.overwriting or "TRUE")
        ),
        "saveAsTable append": lambda: rows.write.saveAsTable(name, mode="append"),
        "saveAsTable overwrite": lambda: rows.write.saveAsTable(name, mode="overwrite"),
    }
    assert statement.write is not None
    writes[statement.write]()


def _in_table_order(spark: SparkSession, rows: DataFrame, name: str) -> DataFrame:
    """``rows`` with the table's columns in its order, for a write by position (Spark moves
    a partition column last)."""
    return rows.select(*spark.table(name).columns)


def _run(spark: SparkSession, statement: Statement) -> list[tuple[object, ...]]:
    if statement.write is not None:
        _write(spark, statement)
        return []
    return [tuple(r) for r in spark.sql(statement.spark).collect()]


class Differential:
    def __init__(self, spark: SparkSession, workspace: Path) -> None:
        self.spark = spark
        self.workspace = workspace
        self.sequences = 0
        self.statements = 0
        self.refused = 0
        self.named = 0
        self.refused_rows: str | None = None
        self.held: dict[str, DataFrame] = {}

    def run(self, sequence: Sequence) -> None:
        sequence = sequence.rendered()
        spark = self.spark
        spark.sql("DROP TABLE IF EXISTS t")
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        spark.conf.set(PARTITION_OVERWRITE_MODE, "dynamic" if sequence.dynamic else "static")
        spark.sql(sequence.create())
        self.held = {"spark.table": spark.table("t")}
        if sequence.fmt in SCANNED_FORMATS:
            self.held["scan"] = connect_plugin.scan(spark, table="t")
        self.refused_rows = sequence.refused
        statements = sequence.statements
        filling = sequence.filling()
        if filling is not None:
            statements = (filling, *statements)
        with duckdb.connect() as duck:
            duck.sql(f"CREATE TEMPORARY TABLE t ({sequence.columns})")
            for at, statement in enumerate(statements):
                self._step(duck, statement, f"statement {at + 1} of {sequence}")
        self.sequences += 1

    def _leaves_refused_rows(self, duck: duckdb.DuckDBPyConnection, statement: Statement) -> bool:
        """Whether the table ``statement`` leaves (by DuckDB) holds a row the format cannot."""
        if self.refused_rows is None or statement.duckdb is None:
            return False
        duck.execute("BEGIN TRANSACTION")
        try:
            duck.execute(statement.duckdb)
            return bool(duck.sql(self.refused_rows).fetchall())
        finally:
            duck.execute("ROLLBACK")

    def _step(self, duck: duckdb.DuckDBPyConnection, statement: Statement, where: str) -> None:
        spark = self.spark
        before = _duck_rows(duck)
        folders = table_folders(self.workspace, spark)
        must_fail = any(
            query is not None and duck.sql(query).fetchall()
            for query in (statement.fails_when, statement.cardinality)
        ) or self._leaves_refused_rows(duck, statement)
        self.statements += 1
        if must_fail:
            self.refused += 1
            with pytest.raises(PySparkException) as caught:
                _run(spark, statement)
            if statement.names is not None:
                self.named += 1
                first = str(caught.value).splitlines()[0]
                assert "`unknown`" not in first, f"{where}: {first}"
                # Spark's errors name the table as written, the gateway's own by its name.
                assert shown(statement.names) in first or "[t]" in first, f"{where}: {first}"
            self._agree(before, where)
            assert table_folders(self.workspace, spark) == folders, where
            return
        if statement.duckdb is None:
            _run(spark, statement)
            self._agree(before, where)
            assert len(table_folders(self.workspace, spark)) == 1, where
            return
        repeated = 0
        if statement.repeated is not None:
            ((repeated,),) = duck.sql(statement.repeated).fetchall()
        answer = _run(spark, statement)
        expected = duck.execute(statement.duckdb).fetchall()
        if statement.counts:
            assert answer[0][0] == expected[0][0] - repeated, where
        self._agree(_duck_rows(duck), where)
        assert _listed(spark) == len(_duck_rows(duck)), where
        assert len(table_folders(self.workspace, spark)) == 1, where

    def _agree(self, rows: list[tuple[object, ...]], where: str) -> None:
        """The table read afresh, and through each DataFrame kept since its creation, holds
        ``rows``."""
        assert _rows(self.spark.table("t")) == rows, where
        for kept, read in self.held.items():
            assert _rows(read) == rows, f"{where}, read through a kept {kept}"


@pytest.fixture
def differential(spark: SparkSession, workspace: Path) -> Differential:
    return Differential(spark, workspace)


@pytest.mark.parametrize("sequence", FINDS)
def test_each_find_ends_like_duckdb(differential: Differential, sequence: Sequence) -> None:
    differential.run(sequence)


def test_random_statement_sequences_end_like_duckdb(
    differential: Differential, request: pytest.FixtureRequest
) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(sequences())
    def one_run(sequence: Sequence) -> None:
        differential.run(sequence)

    budget = dml_seconds(request.config)
    first = last = first_seed(request.config, "--dml-seed")
    started = time.monotonic()
    try:
        while time.monotonic() - started < budget:
            seed(last)(one_run)()
            if time.monotonic() - started < budget:
                last += 1
    finally:
        request.config.stash.setdefault(DML_RUNS, []).append(
            f"{differential.sequences} sequences, {differential.statements} statements "
            f"({differential.refused} refused as they must be, {differential.named} of them "
            f"naming the table) in {time.monotonic() - started:.0f} s; seeds {first} to "
            f"{last} (--dml-seed)"
        )
