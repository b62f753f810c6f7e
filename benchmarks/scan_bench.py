"""What a schema-on-read scan costs against Spark's own json and csv readers, in one run.

``ROWS`` rows of six columns (integers, a double, a string, a boolean, with
some nulls) are written once as json lines and as csv with a header, in
``FILES_PER_DIR`` files in each of ``TOP_DIRS`` x ``SUB_DIRS`` directories.
Both readers get the same schema as a DDL string and both run through the
same gateway, in front of the same embedded Spark Connect server, so both
pay the forwarding; each run interleaves them:

- (a) ``connect_plugin.scan(..., columns=<the table columns>).toArrow()``
  against ``spark.read.schema(ddl).json(root).toArrow()`` (or ``.csv``, with
  ``recursiveFileLookup`` so that Spark descends into the directories). The
  columns are named because a wildcard scan adds ``dir0``/``dir1``, which
  Spark's reader does not;
- (b) ``count()`` both ways (the gateway rewrites the scan's count into a
  scan that decodes nothing);
- (c) the floor: the same files read in this process with
  ``pyarrow.json.read_json`` / ``pyarrow.csv.read_csv`` and the same schema.

After a warm-up, (a) and (b) report the median of ``RUNS`` runs. Then the
planning time of a wildcard json scan over 1, 100 and 2000 small files:
``df.schema`` through the gateway (Spark asks the data source for its schema,
which plans the scan in a Python worker), the first time and again with a
new DataFrame, beside ``spark.read.json(dir).schema`` for reference; and
``plan_scan`` in this process, cold (after ``clear_schema_cache()``) and
cached.

Targets (issue 5): toArrow spark.read / scan >= 1.3 for each format; the
scan's count() faster than spark.read's.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
from pyspark.sql.connect.session import SparkSession

import connect_plugin
from connect_plugin.config import Config
from connect_plugin.scanning import ScanSpec, clear_schema_cache, plan_scan
from connect_plugin.server.stack import Stack

ROWS = 2_000_000
TOP_DIRS = 2
SUB_DIRS = 4
FILES_PER_DIR = 4
RUNS = 3
PLAN_FILE_COUNTS = (1, 100, 2000)
PLAN_FILE_ROWS = 10
TO_ARROW_TARGET = 1.3
COUNT_TARGET = 1.0
SEED = 5

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("k", pa.int32()),
        ("qty", pa.int64()),
        ("price", pa.float64()),
        ("name", pa.string()),
        ("flag", pa.bool_()),
    ]
)
DDL = "id BIGINT, k INT, qty BIGINT, price DOUBLE, name STRING, flag BOOLEAN"
COLUMNS = SCHEMA.names
FORMATS = ("json", "csv")
MEASURES = ("scan toArrow", "spark toArrow", "scan count", "spark count")


class Target(NamedTuple):
    """One target: how many times faster the scan was than spark.read, and the bar."""

    label: str
    ratio: float
    at_least: float
    strictly: bool

    @property
    def met(self) -> bool:
        return self.ratio > self.at_least if self.strictly else self.ratio >= self.at_least


class PlanTimes(NamedTuple):
    """Seconds to plan a scan of ``files`` small files, through the gateway and in-process."""

    files: int
    schema_cold: float
    schema_warm: float
    spark_schema: float
    plan_cold: float
    plan_cached: float


def _table(rows: int, first_id: int = 0) -> pa.Table:
    rng = np.random.default_rng(SEED + first_id)
    ids = np.arange(first_id, first_id + rows, dtype=np.int64)
    missing = rng.random(rows) < 0.05
    return pa.table(
        {
            "id": ids,
            "k": pa.array(rng.integers(0, 100, rows, dtype=np.int32)),
            "qty": pa.array(rng.integers(0, 1_000_000, rows), mask=missing),
            "price": pa.array(np.round(rng.random(rows) * 1000, 2), mask=missing[::-1]),
            "name": pc.binary_join_element_wise(
                "name_", pa.array(ids % 5000).cast(pa.string()), ""
            ),
            "flag": pa.array(rng.random(rows) < 0.5),
        },
        schema=SCHEMA,
    )


def _json_lines(table: pa.Table) -> bytes:
    """The table as json lines, built by Arrow kernels rather than row by row in Python."""
    parts: list[Any] = []
    for index, field in enumerate(table.schema):
        column = table.column(index).combine_chunks()
        text = column.cast(pa.string())
        if pa.types.is_string(field.type):
            text = pc.binary_join_element_wise('"', text, '"', "")
        parts += [("{" if index == 0 else ",") + f'"{field.name}":', pc.fill_null(text, "null")]
    lines = pc.binary_join_element_wise(*parts, "}\n", "")
    _, offsets, data = lines.buffers()
    bounds = np.frombuffer(offsets, dtype=np.int32)[[lines.offset, lines.offset + len(lines)]]
    return data.to_pybytes()[bounds[0] : bounds[1]]


def _write_data(root: Path) -> dict[str, list[Path]]:
    """Every row once per format, spread evenly over the directories and files."""
    files = TOP_DIRS * SUB_DIRS * FILES_PER_DIR
    per_file = -(-ROWS // files)
    written: dict[str, list[Path]] = {name: [] for name in FORMATS}
    number = 0
    for top in range(TOP_DIRS):
        for sub in range(SUB_DIRS):
            for part in range(FILES_PER_DIR):
                first = number * per_file
                table = _table(min(per_file, ROWS - first), first)
                number += 1
                for name in FORMATS:
                    folder = root / name / f"top{top}" / f"sub{sub}"
                    folder.mkdir(parents=True, exist_ok=True)
                    path = folder / f"part-{part:03d}.{name}"
                    if name == "json":
                        path.write_bytes(_json_lines(table))
                    else:
                        pa_csv.write_csv(table, path)
                    written[name].append(path)
    return written


def _scan(spark: SparkSession, root: Path, name: str, columns: list[str] | None = COLUMNS) -> Any:
    options = {"header": "true"} if name == "csv" else None
    return connect_plugin.scan(
        spark, str(root), format=name, columns=columns, schema=DDL, options=options
    )


def _spark_read(spark: SparkSession, root: Path, name: str) -> Any:
    reader = spark.read.schema(DDL).option("recursiveFileLookup", True)
    if name == "csv":
        return reader.option("header", True).csv(str(root))
    return reader.json(str(root))


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def _local(name: str, paths: list[Path]) -> float:
    """The floor: pyarrow's own reader over the same files, in this process."""
    started = time.perf_counter()
    tables = []
    for path in paths:
        if name == "json":
            options = pa_json.ParseOptions(explicit_schema=SCHEMA)
            tables.append(pa_json.read_json(path, parse_options=options))
        else:
            types = pa_csv.ConvertOptions(column_types=SCHEMA, include_columns=COLUMNS)
            tables.append(pa_csv.read_csv(path, convert_options=types))
    table = pa.concat_tables(tables)
    elapsed = time.perf_counter() - started
    assert table.num_rows == ROWS, table.num_rows
    return elapsed


def _local_median(name: str, paths: list[Path]) -> float:
    _local(name, paths)
    return statistics.median(_local(name, paths) for _ in range(RUNS))


def _check(table: pa.Table) -> None:
    assert table.num_rows == ROWS, f"{table.num_rows} rows, expected {ROWS}"
    assert table.column_names == COLUMNS, table.schema


def _measure(spark: SparkSession, root: Path, name: str) -> dict[str, list[float]]:
    """Seconds of each of ``MEASURES``, run after run, interleaved, after one warm-up."""
    folder = root / name

    def run() -> tuple[float, ...]:
        scan_arrow, table = _timed(lambda: _scan(spark, folder, name).toArrow())
        _check(table)
        spark_arrow, table = _timed(lambda: _spark_read(spark, folder, name).toArrow())
        _check(table)
        del table
        scan_count, counted = _timed(lambda: _scan(spark, folder, name).count())
        assert counted == ROWS, counted
        spark_count, counted = _timed(lambda: _spark_read(spark, folder, name).count())
        assert counted == ROWS, counted
        return scan_arrow, spark_arrow, scan_count, spark_count

    run()
    runs = [run() for _ in range(RUNS)]
    return {
        measure: list(values)
        for measure, values in zip(MEASURES, zip(*runs, strict=True), strict=True)
    }


def _small_files(folder: Path, count: int) -> None:
    folder.mkdir(parents=True)
    text = _json_lines(_table(PLAN_FILE_ROWS))
    for number in range(count):
        (folder / f"f{number:05d}.json").write_bytes(text)


def _planning(spark: SparkSession, root: Path) -> list[PlanTimes]:
    """Each file count in a fresh directory: the first ``df.schema``, then a second one."""
    warm_up = root / "warm-up"
    _small_files(warm_up, 1)
    _ = _scan(spark, warm_up, "json", columns=None).schema
    results = []
    for count in PLAN_FILE_COUNTS:
        folder = root / f"files-{count}"
        _small_files(folder, count)

        def schema(folder: Path = folder) -> Any:
            return _scan(spark, folder, "json", columns=None).schema

        cold, _ = _timed(schema)
        warm, _ = _timed(schema)
        spark_schema, _ = _timed(lambda folder=folder: _spark_read(spark, folder, "json").schema)
        spec = ScanSpec(paths=[str(folder)], format="json", provided_schema=SCHEMA)
        clear_schema_cache()
        plan_cold, plan = _timed(lambda spec=spec: plan_scan(spec))
        assert not plan.from_cache
        assert len(plan.files) == count
        plan_cached, plan = _timed(lambda spec=spec: plan_scan(spec))
        assert plan.from_cache
        results.append(PlanTimes(count, cold, warm, spark_schema, plan_cold, plan_cached))
    return results


def _report(timings: dict[str, dict[str, list[float]]], local: dict[str, float]) -> list[Target]:
    files = TOP_DIRS * SUB_DIRS * FILES_PER_DIR
    print(
        f"{ROWS:,} rows in {files} files ({TOP_DIRS} x {SUB_DIRS} directories) per format, "
        f"through the gateway; seconds, median of {RUNS} interleaved runs after a warm-up:"
    )
    width = 28
    print(f"  {'':36}" + "".join(f"{name:>{width}}" for name in FORMATS))
    labels = {
        "scan toArrow": "(a) scan(columns=...).toArrow()",
        "spark toArrow": "    spark.read.<fmt>().toArrow()",
        "scan count": "(b) scan().count()",
        "spark count": "    spark.read.<fmt>().count()",
    }
    medians = {
        name: {m: statistics.median(v) for m, v in timings[name].items()} for name in FORMATS
    }
    for measure in MEASURES:
        cells = []
        for name in FORMATS:
            runs = ", ".join(f"{value:.2f}" for value in timings[name][measure])
            cells.append(f"{medians[name][measure]:.3f} ({runs})")
        print(f"  {labels[measure]:36}" + "".join(f"{cell:>{width}}" for cell in cells))
    print(
        f"  {'(c) pyarrow read_<fmt>(), in process':36}"
        + "".join(f"{local[n]:>{width}.3f}" for n in FORMATS)
    )
    targets = []
    for what, bar, strictly in (("toArrow", TO_ARROW_TARGET, False), ("count", COUNT_TARGET, True)):
        ratios = [medians[n][f"spark {what}"] / medians[n][f"scan {what}"] for n in FORMATS]
        print(f"  {'spark.read / scan, ' + what:36}" + "".join(f"{r:>{width}.2f}" for r in ratios))
        for name, ratio in zip(FORMATS, ratios, strict=True):
            targets.append(Target(f"{what} {name}", ratio, bar, strictly))
    floors = [medians[n]["scan toArrow"] / local[n] for n in FORMATS]
    print(f"  {'scan toArrow / pyarrow floor':36}" + "".join(f"{r:>{width}.2f}" for r in floors))
    return targets


def _report_planning(results: list[PlanTimes]) -> None:
    print(
        f"planning a wildcard json scan with a provided schema, small files of {PLAN_FILE_ROWS} "
        "rows; ms (df.schema through the gateway, plan_scan in this process):"
    )
    headings = (
        "files",
        "df.schema cold",
        "df.schema warm",
        "spark.read schema",
        "plan_scan cold",
        "plan_scan cached",
    )
    print("  " + "".join(f"{h:>18}" for h in headings))
    for times in results:
        cells = [f"{times.files:>18}"] + [f"{value * 1000:>18.1f}" for value in times[1:]]
        print("  " + "".join(cells))


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="scan-bench-") as tmp:
        root = Path(tmp)
        written, paths = _timed(lambda: _write_data(root / "data"))
        print(f"wrote the data in {written:.1f} s", flush=True)
        config = Config(
            local=True, port=0, workspace=root / "workspace", state_dir=root / "state", conf_dir=None
        )
        with Stack(config) as stack:
            assert stack.gateway is not None
            spark = SparkSession.builder.remote(stack.gateway.address).create()
            try:
                timings = {name: _measure(spark, root / "data", name) for name in FORMATS}
                planning = _planning(spark, root / "plan")
            finally:
                spark.stop()
        local = {name: _local_median(name, paths[name]) for name in FORMATS}
    targets = _report(timings, local)
    _report_planning(planning)
    for target in targets:
        bar = f"> {target.at_least}" if target.strictly else f">= {target.at_least}"
        verdict = "met" if target.met else "NOT met"
        print(f"target {target.label}: spark.read / scan = {target.ratio:.2f} ({bar}): {verdict}")
