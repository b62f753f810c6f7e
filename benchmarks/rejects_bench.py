"""What ``on_error="reject"`` costs, side by side with the policies it stands beside.

``FILES`` json-lines files of ``ROWS_PER_FILE`` rows (the scan benchmark's
six columns) are written twice: clean, and dirty with one record in
``DIRTY_EVERY`` carrying a ``qty`` that is no number (a CAST reject) and
one in ``DIRTY_EVERY`` cut short (a MALFORMED RECORD). In one run,
interleaved, after a warm-up, the median of ``RUNS``, each scan read in
this process the way one of Spark's workers reads its files
(``RejectFiles.read`` over ``ScanReader``), every row to Arrow:

- dirty files: ``reject`` against ``skip`` (both drop the same records;
  ``reject`` also writes each file's rejects to a parquet file);
- clean files: ``reject`` against ``fail`` (nothing to reject: what the
  option costs when it finds nothing).

The files and rejects are written under the system temp folder and deleted
afterwards. The scan's per-file warnings about bad records are muted.
"""

from __future__ import annotations

import dataclasses
import logging
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.scan_bench import SCHEMA, _json_lines, _table
from connect_plugin.scanning import ScanReader, ScanSpec, plan_scan
from connect_plugin.scanning.reading.rejects import RejectFiles

FILES = 16
ROWS_PER_FILE = 50_000
DIRTY_EVERY = 500
RUNS = 3


def _write(root: Path) -> tuple[Path, Path, int]:
    """The clean and the dirty folder, and how many records the dirty one has bad."""
    clean, dirty = root / "clean", root / "dirty"
    clean.mkdir()
    dirty.mkdir()
    bad = 0
    for n in range(FILES):
        lines = _json_lines(_table(ROWS_PER_FILE, n * ROWS_PER_FILE)).splitlines(keepends=True)
        (clean / f"part-{n:03}.json").write_bytes(b"".join(lines))
        for index in range(DIRTY_EVERY // 2, len(lines), DIRTY_EVERY):
            lines[index] = b'{"id": 0, "qty": "many"}\n'
            lines[index + 1] = b'{"id": 0, "qty": \n'
            bad += 2
        (dirty / f"part-{n:03}.json").write_bytes(b"".join(lines))
    return clean, dirty, bad


def _scan(folder: Path, on_error: str, rejects: Path | None) -> Callable[[], int]:
    spec = ScanSpec([str(folder)], "json", provided_schema=SCHEMA, on_error=on_error)
    if rejects is not None:
        rejects.mkdir()
        spec = dataclasses.replace(spec, rejects_folder=str(rejects))

    def run() -> int:
        plan = plan_scan(spec)
        sink = RejectFiles.of(spec)
        reader = ScanReader(plan, rejects=sink)
        batches = reader.read() if sink is None else sink.read(reader, plan.files)
        return sum(batch.num_rows for batch in batches)

    return run


def main() -> None:
    logging.getLogger("connect_plugin.scanning").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="rejects-bench-") as folder:
        root = Path(folder)
        print(f"writing {FILES} files of {ROWS_PER_FILE:,} rows, clean and dirty ...", flush=True)
        clean, dirty, bad = _write(root)
        total = FILES * ROWS_PER_FILE
        measures = {
            "dirty skip": (_scan(dirty, "skip", None), total - bad),
            "dirty reject": (_scan(dirty, "reject", root / "dirty-rejects"), total - bad),
            "clean fail": (_scan(clean, "fail", None), total),
            "clean reject": (_scan(clean, "reject", root / "clean-rejects"), total),
        }
        times: dict[str, list[float]] = {label: [] for label in measures}
        for run in range(RUNS + 1):
            for label, (action, expected) in measures.items():
                start = time.perf_counter()
                rows = action()
                seconds = time.perf_counter() - start
                if rows != expected:
                    raise AssertionError(f"{label} gave {rows} rows, not {expected}")
                if run:
                    times[label].append(seconds)
        median = {label: statistics.median(spent) for label, spent in times.items()}
        print(f"{bad:,} bad records of {total:,} in the dirty files")
        print(f"{'measure':14s} {'seconds':>8s} {'rows/s':>12s}")
        for label, seconds in median.items():
            print(f"{label:14s} {seconds:8.3f} {measures[label][1] / seconds:12,.0f}")
        print(
            f"reject / skip on dirty files: {median['dirty reject'] / median['dirty skip']:.2f}x time"
        )
        print(
            f"reject / fail on clean files: {median['clean reject'] / median['clean fail']:.2f}x time"
        )


if __name__ == "__main__":
    main()
