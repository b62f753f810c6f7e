"""Running one case: a data set written to disk, a scan of it, and a sequence of queries compared.

Results are compared as multisets of rows, values normalised so that the
readers' deliberate differences do not count: a whole number as an exact
integer, whatever type holds it (the scan widens int to bigint and hive
keys to bigint, Spark reads hive keys as int, DuckDB as BIGINT; an integer
past 2^53 held by a double is compared as the double holds it), any other
number as a float of 12 significant digits, booleans and text as they are,
lists item by item, the rescued column (the scan's JSON object, DuckDB's
struct) by its keys folded and the values that are not null. A ``Limit`` is compared by its size and as a
sub-multiset of the unlimited reference rows. A step where the scan and a
reference differ raises ``Disagreement``, whose message is the whole
reproduction (``Case`` literal, files, steps) and whose ``signature``
groups finds of one kind.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import connect_plugin
from tests.scan_differential.datasets import RESCUED, DataFile, DataSet, fold
from tests.scan_differential.queries import (
    Cache,
    Case,
    Change,
    Count,
    Distinct,
    GroupCount,
    Limit,
    Query,
    Rescan,
    Rows,
    Union,
    Unpersist,
    needs_bad_file,
    reference_sql,
    scan_sql,
    where_sql,
)
from tests.scan_differential.references import (
    DuckDBReference,
    Reference,
    SparkReference,
    spark_supports,
)

SHOWN_ROWS = 12
NAMELESS_FIELDS = "cannot be read from headerless"
"""The refusal of a named column over headerless files (docs/scans.md, Projection)."""
Normalised = tuple[Any, ...]


class Disagreement(AssertionError):
    """The scan's answer to a step is not what the references give."""

    def __init__(self, signature: str, message: str) -> None:
        super().__init__(message)
        self.signature = signature


@dataclass
class Tally:
    """What one case ran: queries on the scan, and comparisons with each reference."""

    queries: int = 0
    compared: Counter[str] = field(default_factory=Counter)


def normalise(value: Any) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float | Decimal):
        number = float(value)
        if number.is_integer():
            return int(number)
        return float(f"{number:.12g}")
    if isinstance(value, list | tuple):
        return tuple(normalise(v) for v in value)
    if isinstance(value, dict):
        found = tuple(sorted((fold(k), normalise(v)) for k, v in value.items() if v is not None))
        return found or None
    return str(value)


def rescued_object(text: str | None) -> dict[str, Any] | None:
    """The scan's rescued JSON object without its file key, as DuckDB's struct compares."""
    if text is None:
        return None
    found: dict[str, Any] = json.loads(text)
    found.pop("_file_path", None)
    return found


def _rows(rows: Sequence[Sequence[Any]]) -> Counter[Normalised]:
    return Counter(tuple(normalise(v) for v in row) for row in rows)


class ScanUnderTest:
    """The scan, one DataFrame (``frame``) or one SQL view (``view``), queried step after step."""

    def __init__(
        self, spark: SparkSession, data_set: DataSet, root: Path, route: str, plan: bool = True
    ) -> None:
        self.spark, self.data_set, self.root, self.route = spark, data_set, root, route
        self.view = f"scan_{uuid.uuid4().hex[:12]}"
        self.rejects = f"rejects_{uuid.uuid4().hex[:12]}" if data_set.on_error == "reject" else None
        self.frame: DataFrame | None = None
        self.cached = False
        self.returned: list[str] | None = None
        """The columns of the last query's rows (of a query that returns whole rows)."""
        if plan:
            self.rescan()

    def rescan(self) -> None:
        data_set = self.data_set
        chosen: dict[str, Any] = {
            "partitioning": data_set.partitioning,
            "on_error": data_set.on_error,
            "rejects_table": self.rejects,
            "evolution": "rescue" if data_set.rescue else None,
            "sample_bytes": data_set.sample_bytes,
        }
        if self.route == "frame":
            self.frame = connect_plugin.scan(
                self.spark,
                str(self.root),
                format=data_set.format,
                columns=None if data_set.projection is None else list(data_set.projection),
                options=data_set.options() or None,
                **chosen,
            )
            return
        options = {
            "path": str(self.root),
            "format": data_set.format,
            **{key: str(value) for key, value in chosen.items() if value is not None},
            **data_set.options(),
        }
        if data_set.projection is not None:
            options["columns"] = ", ".join(data_set.projection)
        listed = ", ".join(f"{key} '{value}'" for key, value in options.items())
        self.spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {self.view} USING scan OPTIONS ({listed})")

    def columns(self) -> list[str]:
        frame = self.frame if self.route == "frame" else self.spark.table(self.view)
        assert frame is not None
        return list(frame.columns)

    def change(self, step: Cache | Unpersist | Rescan) -> None:
        if isinstance(step, Rescan):
            self.rescan()
        elif self.route == "view":
            verb = "CACHE LAZY TABLE" if isinstance(step, Cache) else "UNCACHE TABLE IF EXISTS"
            self.spark.sql(f"{verb} {self.view}").collect()
        elif isinstance(step, Cache):
            assert self.frame is not None
            self.frame.cache()
            self.cached = True
        else:
            assert self.frame is not None
            self.frame.unpersist()

    def run(self, query: Query) -> list[tuple[Any, ...]]:
        """The rows the scan gives, whole rows in the data set's column order."""
        wanted = self.data_set.columns()
        if self.route == "view":
            result = self.spark.sql(scan_sql(query, self.view)).collect()
        else:
            result = self._frame_rows(query)
        self.returned = None
        if isinstance(query, Rows | Limit | Union):
            if result:
                self.returned = list(result[0].__fields__)
            return [tuple(_value(row.asDict(), c) for c in wanted) for row in result]
        if isinstance(query, Count) and isinstance(result, int):
            return [(result,)]
        return [tuple(row) for row in result]

    def _frame_rows(self, query: Query) -> Any:
        frame = self.frame
        assert frame is not None

        def where(filters: Any) -> DataFrame:
            return frame.where(where_sql(filters, "`")) if filters else frame

        if isinstance(query, Rows):
            return where(query.where).collect()
        if isinstance(query, Count):
            return where(query.where).count()
        if isinstance(query, GroupCount):
            return where(query.where).groupBy(query.key).count().collect()
        if isinstance(query, Distinct):
            return where(query.where).select(*query.columns).distinct().collect()
        if isinstance(query, Limit):
            return where(query.where).limit(query.n).collect()
        if isinstance(query, Union):
            return where(query.left).unionAll(where(query.right)).collect()
        left, right = where(query.left).alias("l"), where(query.right).alias("r")
        joined = left.join(right, F.col("l.id") == F.col("r.id"))
        return joined.select(F.col("l.id"), F.col(f"r.`{query.column}`")).collect()

    def close(self) -> None:
        if self.route == "view":
            self.spark.sql(f"UNCACHE TABLE IF EXISTS {self.view}").collect()
            self.spark.catalog.dropTempView(self.view)
        elif self.frame is not None and self.cached:
            self.frame.unpersist()
        if self.rejects is not None:
            self.spark.sql(f"DROP TABLE IF EXISTS {self.rejects}").collect()


def _value(row: dict[str, Any], column: str) -> Any:
    """A column of a row of the scan; the rescued column as the object it holds (a column the
    row lacks is None here, and a disagreement of its columns in ``_check``)."""
    value = row.get(column)
    return rescued_object(value) if fold(column) == fold(RESCUED) else value


class References:
    """The references over the files there are, in the terms of the scan as it was planned
    (``data_set``); made anew when the files change."""

    def __init__(
        self, spark: SparkSession, connection: duckdb.DuckDBPyConnection, data_set: DataSet,
        root: Path,
    ) -> None:  # fmt: skip
        self._spark, self._connection, self._data_set, self._root = spark, connection, data_set, root
        self.made: list[SparkReference | DuckDBReference] = []

    def over(self, files: Sequence[DataFile]) -> list[Reference]:
        self.drop()
        data_set = self._data_set
        self.made.append(DuckDBReference(self._connection, data_set, self._root, files))
        if spark_supports(data_set) and spark_supports(replace(data_set, files=tuple(files))):
            self.made.append(SparkReference(self._spark, data_set, self._root))
        return list(self.made)

    def drop(self) -> None:
        made, self.made = self.made, []
        for reference in made:
            reference.drop()


def run_case(
    case: Case, route: str, root: Path, spark: SparkSession, connection: duckdb.DuckDBPyConnection
) -> Tally:
    """Write the case's files under ``root``, then run and compare its steps on one scan."""
    data_set = case.data_set
    data_set.write(root)
    tally = Tally()
    report = _Report(case, route, root)
    scan = ScanUnderTest(spark, data_set, root, route, plan=False)
    refs = References(spark, connection, data_set, root)
    try:
        try:
            scan.rescan()
            got = scan.columns()
        except Exception as error:
            if data_set.refuses_names() and NAMELESS_FIELDS in str(error).splitlines()[0]:
                return tally
            if data_set.unreadable_files():
                if "SCAN_UNREADABLE_FILE" not in str(error).splitlines()[0]:
                    report.fail(-1, "refusal", f"planning raised {_error_text(error)}")
                return tally
            if data_set.on_error == "fail" and data_set.bad_files():
                return tally
            report.fail(-1, "scan failed", f"planning raised {_error_text(error)}")
        if data_set.refuses_names():
            report.fail(-1, "refusal", f"planning gave columns {got} where headerless files "
                        "have no field of a name")  # fmt: skip
        if sorted(got) != sorted(data_set.columns()):
            report.fail(-1, "columns", f"scan columns {got}, expected {list(data_set.columns())}")
        files = list(data_set.files)
        current = refs.over(files)
        for index, step in enumerate(case.steps):
            if isinstance(step, Change):
                files = _changed(data_set, root, files, step)
                current = refs.over(files)
            elif isinstance(step, Cache | Unpersist | Rescan):
                try:
                    scan.change(step)
                except Exception as error:
                    if not _may_fail(replace(data_set, files=tuple(files))):
                        report.fail(index, "scan failed", f"scan raised {_error_text(error)}")
            else:
                tally.queries += 1
                now = replace(data_set, files=tuple(files))
                _check(scan, step, index, current, report, tally, now)
    finally:
        refs.drop()
        scan.close()
    return tally


def _may_fail(now: DataSet) -> bool:
    """Whether planning the scan may fail: a bad record under ``fail`` in the sampled head,
    a file in UTF-16."""
    return bool(now.unreadable_files()) or (now.on_error == "fail" and bool(now.bad_files()))


def _changed(data_set: DataSet, root: Path, files: list[DataFile], step: Change) -> list[DataFile]:
    """The files once ``step`` deleted or added one, on disk and in the list."""
    if step.delete is not None:
        gone = data_set.files[step.delete]
        (root / gone.relative(data_set)).unlink()
        return [f for f in files if f is not gone]
    assert step.add is not None
    data_set.write_file(root, step.add)
    return [*files, step.add]


def _check(
    scan: ScanUnderTest, query: Query, index: int, refs: Sequence[Reference], report: _Report,
    tally: Tally, now: DataSet,
) -> None:  # fmt: skip
    """Compare one query; ``now`` is the data set with the files there are."""
    data_set = scan.data_set
    unreadable = now.unreadable_files()
    bad = data_set.on_error == "fail" and bool(now.bad_files())
    failing = bad or bool(unreadable)
    must_fail = (bad and needs_bad_file(query, data_set, scan.root, now.bad_files())) or (
        bool(unreadable) and needs_bad_file(query, data_set, scan.root, unreadable)
    )
    expected = {ref.name: ref.run(reference_sql(query, ref.view, data_set.columns(), ref.quote))
                for ref in refs}  # fmt: skip
    try:
        got = scan.run(query)
    except Exception as error:
        if failing:
            return
        report.fail(index, "scan failed", f"scan raised {_error_text(error)}", expected)
        return
    if must_fail:
        report.fail(index, "no error", "scan gave rows where a bad record must fail the query",
                    expected, got)  # fmt: skip
    if scan.returned is not None and sorted(scan.returned) != sorted(data_set.columns()):
        report.fail(index, "columns", f"rows of columns {scan.returned}, the scan's are "
                    f"{list(data_set.columns())}", expected, got)  # fmt: skip
    for name, rows in expected.items():
        tally.compared[name] += 1
        ours, theirs = _rows(got), _rows(rows)
        if isinstance(query, Limit):
            size = min(query.n, sum(theirs.values()))
            if sum(ours.values()) != size or ours - theirs:
                report.fail(index, f"limit vs {name}", f"{size} rows from the reference's",
                            expected, got)  # fmt: skip
        elif ours != theirs:
            report.fail(index, f"rows vs {name}", f"rows differ from {name}", expected, got)


@dataclass
class _Report:
    case: Case
    route: str
    root: Path

    def fail(
        self, index: int, kind: str, what: str,
        expected: dict[str, list[tuple[Any, ...]]] | None = None,
        got: list[tuple[Any, ...]] | None = None,
    ) -> None:  # fmt: skip
        step = self.case.steps[index] if index >= 0 else None
        signature = f"{self.route}:{type(step).__name__ if step else 'Scan'}:{kind}"
        lines = [
            f"{signature}: {what}",
            f"route {self.route}, step {index}: {step!r}",
            f"case = {self.case!r}",
            self.case.data_set.describe(self.root),
        ]
        if got is not None:
            lines.append(f"scan   : {_shown(got)}")
        for name, rows in (expected or {}).items():
            lines.append(f"{name:7s}: {_shown(rows)}")
        raise Disagreement(signature, "\n".join(lines))


def _error_text(error: Exception) -> str:
    """The error's class, first line and, for a worker's traceback, its last line (the cause)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    cause = [line for line in lines[1:] if re.match(r"[\w.]*(Error|Exception|Invalid)\w*: ", line)][-1:]
    return " / ".join([f"{type(error).__name__}: {lines[0]}", *cause])


def _shown(rows: Sequence[Sequence[Any]]) -> str:
    ordered = sorted((tuple(normalise(v) for v in r) for r in rows), key=repr)
    more = f" ... ({len(ordered)} rows)" if len(ordered) > SHOWN_ROWS else ""
    return repr(ordered[:SHOWN_ROWS]) + more
