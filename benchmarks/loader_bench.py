"""What the result set loader costs against pyarrow.Table.from_pylist, in one run.

Rows of six mixed columns (integers, floats, strings, a list of integers) go
through the per-value writer (``start_row``, ``set`` per value, ``save_row``)
and through the bulk path (``write_rows`` on tuples), harvesting whenever a
batch fills; ``Table.from_pylist`` builds a table from the same rows as dicts.
All cases are interleaved run by run so that warm-up and machine noise hit
them alike, and the median of each is reported as values per second.

The bulk path converts tuples with one ``pyarrow.array`` call per chunk, so
Arrow's own conversion of the same tuples, measured alongside, is the
ceiling of what it can reach. The limit check compares a run whose batches
end at the byte limit, each with an overflow row, against a run whose
limits are out of reach.

Targets (issue #4): per-value writer >= 1.0x from_pylist, bulk path >= 3x,
limit and overflow bookkeeping <= 10%.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable
from typing import NamedTuple

import pyarrow as pa

from connect_plugin.scanning import ResultSetLoader

ROWS = 200_000
RUNS = 7
PER_VALUE_TARGET = 1.0
BULK_TARGET = 3.0
BOOKKEEPING_TARGET = 0.10
LIMITED_BYTES = 512 * 1024


class Limits(NamedTuple):
    max_rows: int
    max_bytes: int


OUT_OF_REACH = Limits(max_rows=65536, max_bytes=1 << 62)
LIMITED = Limits(max_rows=65536, max_bytes=LIMITED_BYTES)

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("price", pa.float64()),
        ("name", pa.string()),
        ("quantity", pa.int64()),
        ("city", pa.string()),
        ("scores", pa.list_(pa.int64())),
    ]
)
CITIES = ["Amsterdam", "Berlin", "Cairo", "Delhi", "Edinburgh", "Fortaleza", None]


def make_rows(count: int) -> list[tuple[object, ...]]:
    generator = random.Random(7)
    return [
        (
            number,
            round(generator.uniform(0, 1000), 2),
            f"customer-{generator.randrange(10**6):06d}",
            generator.randrange(100) if number % 10 else None,
            generator.choice(CITIES),
            [generator.randrange(1000) for _ in range(generator.randrange(4))],
        )
        for number in range(count)
    ]


def per_value(rows: list[tuple[object, ...]], limits: Limits) -> list[pa.RecordBatch]:
    loader = ResultSetLoader(SCHEMA, max_rows=limits.max_rows, max_bytes=limits.max_bytes)
    writer = loader.writer
    ident, price, name, quantity, city, scores = (writer.column(i) for i in range(6))
    batches = []
    loader.start_batch()
    for row in rows:
        if writer.is_full():
            batches.append(loader.harvest())
            loader.start_batch()
        writer.start_row()
        ident.set(row[0])
        price.set(row[1])
        name.set(row[2])
        quantity.set(row[3])
        city.set(row[4])
        scores.set(row[5])
        writer.save_row()
    batches.append(loader.harvest())
    return batches


def bulk(rows: list[tuple[object, ...]], limits: Limits) -> list[pa.RecordBatch]:
    loader = ResultSetLoader(SCHEMA, max_rows=limits.max_rows, max_bytes=limits.max_bytes)
    writer = loader.writer
    batches = []
    position = 0
    loader.start_batch()
    while position < len(rows):
        position += writer.write_rows(rows, position)
        if writer.is_full():
            batches.append(loader.harvest())
            loader.start_batch()
    batches.append(loader.harvest())
    return batches


def timed(work: Callable[[], object]) -> float:
    """Seconds ``work`` takes, starting from a clean collector so no case pays another's debt."""
    gc.collect()
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def report(label: str, seconds: float, values: int) -> None:
    print(f"{label:<44} {values / seconds / 1e6:8.2f} M values/s  ({seconds * 1000:7.1f} ms)")


def verdict(label: str, ratio: float, target: float, *, at_most: bool = False) -> None:
    met = ratio <= target if at_most else ratio >= target
    sign = "<=" if at_most else ">="
    print(f"{label:<44} {ratio:8.2f}   target {sign} {target:.2f}   {'met' if met else 'MISSED'}")


def main() -> None:
    rows = make_rows(ROWS)
    dicts = [dict(zip(SCHEMA.names, row, strict=True)) for row in rows]
    values = ROWS * len(SCHEMA)
    expected = pa.Table.from_pylist(dicts, schema=SCHEMA)
    for build in (per_value, bulk):
        for limits in (OUT_OF_REACH, LIMITED):
            table = pa.Table.from_batches(build(rows, limits), schema=SCHEMA)
            assert table.equals(expected), f"{build.__name__} {limits} built other data"
    overflows = len(per_value(rows, LIMITED)) - 1

    struct = pa.struct(list(SCHEMA))
    cases: dict[str, Callable[[], object]] = {
        "from_pylist": lambda: pa.Table.from_pylist(dicts, schema=SCHEMA),
        "arrow_only": lambda: pa.array(rows, type=struct),
        "per_value": lambda: per_value(rows, OUT_OF_REACH),
        "per_value_limited": lambda: per_value(rows, LIMITED),
        "bulk": lambda: bulk(rows, OUT_OF_REACH),
        "bulk_limited": lambda: bulk(rows, LIMITED),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(RUNS):
        for name, work in cases.items():
            times[name].append(timed(work))
    median = {name: statistics.median(samples) for name, samples in times.items()}

    print(f"{ROWS} rows x {len(SCHEMA)} columns, median of {RUNS} interleaved runs")
    report("pyarrow.Table.from_pylist (dict rows)", median["from_pylist"], values)
    report("per-value writer, limits out of reach", median["per_value"], values)
    report(
        f"per-value writer, {overflows} byte-limit overflows", median["per_value_limited"], values
    )
    report("bulk write_rows, limits out of reach", median["bulk"], values)
    report("bulk write_rows, byte-limited batches", median["bulk_limited"], values)
    report("pyarrow.array(tuples, struct) alone", median["arrow_only"], values)
    verdict(
        "per-value writer vs from_pylist",
        median["from_pylist"] / median["per_value"],
        PER_VALUE_TARGET,
    )
    verdict("bulk path vs from_pylist", median["from_pylist"] / median["bulk"], BULK_TARGET)
    print(
        f"{'  (ceiling: Arrow conversion alone)':<44} "
        f"{median['from_pylist'] / median['arrow_only']:8.2f}"
    )
    verdict(
        "limit bookkeeping, per-value (extra time)",
        median["per_value_limited"] / median["per_value"] - 1,
        BOOKKEEPING_TARGET,
        at_most=True,
    )
    verdict(
        "limit bookkeeping, bulk (extra time)",
        median["bulk_limited"] / median["bulk"] - 1,
        BOOKKEEPING_TARGET,
        at_most=True,
    )


if __name__ == "__main__":
    main()
