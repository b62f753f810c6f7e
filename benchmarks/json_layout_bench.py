"""Json layouts side by side: the same records as lines, as a top-level array, as documents.

``ROWS`` rows (the scan benchmark's six columns) are written once as json
lines, as one compact top-level array, and as pretty-printed documents
(two-space indent, one field a line). In one run, interleaved, after a
warm-up, the median of ``RUNS``:

- read: ``ScanReader(plan_scan(spec)).read()`` in this process, every row
  to Arrow, rows/s per layout and the ratio to lines;
- count: the same scan with ``columns=[]``, which decodes nothing;
- the floor: ``pyarrow.json.read_json`` of the lines file (one thread);
- if ijson is installed (``pip install ijson``), ``ijson.items`` over the
  array file with its C backend: Python dicts only, before any conversion
  to Arrow, the lower bound of the other way to stream an array.

Then streaming: one compact array of more than ``LARGE_BYTES`` on a single
line, and one a quarter of that size, are each read in a fresh process that
reports its peak resident memory (``VmHWM``, Linux) before and after reading
every row. The peaks stay the same when the file grows four times: memory is
bounded by the batch limits and the parse block, not by the file. The files
are written under the system temp folder and deleted afterwards.
"""

from __future__ import annotations

import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.json as pa_json

from benchmarks.scan_bench import SCHEMA, _json_lines, _table
from connect_plugin.scanning import ScanReader, ScanSpec, plan_scan

ROWS = 1_000_000
RUNS = 3
LARGE_BYTES = 1_100 * 2**20
"""The large array file: more than 1 GiB."""
SMALL_FRACTION = 4
CHUNK_ROWS = 100_000
LAYOUTS = ("lines", "array", "documents")
MIB = 2**20

_READ_IN_A_FRESH_PROCESS = """
import json, sys, time
from connect_plugin.scanning import ScanReader, ScanSpec, plan_scan

def peak_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

base = peak_kib()
start = time.perf_counter()
reader = ScanReader(plan_scan(ScanSpec([sys.argv[1]], "json")))
rows = sum(batch.num_rows for batch in reader.read())
seconds = time.perf_counter() - start
print(json.dumps({"rows": rows, "seconds": seconds, "base_kib": base, "peak_kib": peak_kib()}))
"""
"""Peak RSS from the kernel's high-water mark of the process's own memory (``VmHWM``):
``getrusage``'s ``ru_maxrss`` of a child started by ``fork`` includes the parent's."""


def _layouts(lines: bytes) -> dict[str, bytes]:
    """The same records in each layout; the records hold no line breaks and no ``,"``."""
    return {
        "lines": lines,
        "array": b"[" + lines.rstrip(b"\n").replace(b"\n", b",") + b"]",
        "documents": lines.replace(b'{"', b'{\n  "').replace(b',"', b',\n  "').replace(
            b"}\n", b"\n}\n"
        ),
    }


def _timed(action: Callable[[], int]) -> tuple[float, int]:
    start = time.perf_counter()
    rows = action()
    return time.perf_counter() - start, rows


def _read(path: Path, columns: list[str] | None) -> Callable[[], int]:
    def run() -> int:
        spec = ScanSpec([str(path)], "json", columns=columns, provided_schema=SCHEMA)
        return sum(batch.num_rows for batch in ScanReader(plan_scan(spec)).read())

    return run


def _floor(path: Path) -> Callable[[], int]:
    def run() -> int:
        options = pa_json.ReadOptions(use_threads=False)
        parse = pa_json.ParseOptions(explicit_schema=SCHEMA)
        return int(pa_json.read_json(path, read_options=options, parse_options=parse).num_rows)

    return run


def _ijson(path: Path) -> Callable[[], int] | None:
    try:
        ijson = importlib.import_module("ijson")
    except ImportError:
        return None

    def run() -> int:
        with path.open("rb") as handle:
            return sum(1 for _ in ijson.items(handle, "item", use_float=True))

    return run


def _write_large_array(path: Path, size: int) -> None:
    """A compact array on one line, of at least ``size`` bytes, from repeated records."""
    body = _json_lines(_table(CHUNK_ROWS)).rstrip(b"\n").replace(b"\n", b",")
    written = 0
    with path.open("wb") as handle:
        handle.write(b"[")
        while written < size:
            if written:
                handle.write(b",")
            handle.write(body)
            written += len(body) + 1
        handle.write(b"]")


def _fresh_process_read(path: Path) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, "-c", _READ_IN_A_FRESH_PROCESS, str(path)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    found: dict[str, float] = json.loads(result.stdout)
    return found


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="json-layouts-") as folder:
        root = Path(folder)
        print(f"writing {ROWS:,} rows in each layout ...", flush=True)
        paths = {}
        for name, data in _layouts(_json_lines(_table(ROWS))).items():
            paths[name] = root / f"{name}.json"
            paths[name].write_bytes(data)
        measures: dict[str, Callable[[], int]] = {}
        for name in LAYOUTS:
            measures[f"read {name}"] = _read(paths[name], None)
            measures[f"count {name}"] = _read(paths[name], [])
        measures["pyarrow read_json lines"] = _floor(paths["lines"])
        ijson_run = _ijson(paths["array"])
        if ijson_run is not None:
            measures["ijson items array (dicts only)"] = ijson_run
        times: dict[str, list[float]] = {label: [] for label in measures}
        for run in range(RUNS + 1):
            for label, action in measures.items():
                seconds, rows = _timed(action)
                if rows != ROWS:
                    raise AssertionError(f"{label} gave {rows} rows, not {ROWS}")
                if run:
                    times[label].append(seconds)
        print(f"{'measure':34s} {'MiB':>7s} {'rows/s':>12s} {'vs lines':>9s}")
        for label, spent in times.items():
            layout = next((name for name in LAYOUTS if label.endswith(name)), "lines")
            median = statistics.median(spent)
            reference = times.get(f"{label.split()[0]} lines", times["read lines"])
            rate, ratio = ROWS / median, statistics.median(reference) / median
            size = paths[layout].stat().st_size / MIB
            print(f"{label:34s} {size:7.1f} {rate:12,.0f} {ratio:9.2f}")
        if ijson_run is None:
            print("ijson: not installed (pip install ijson) - skipped")
        for path in paths.values():
            path.unlink()
        print(f"\nstreaming a single-line array (peak RSS of a fresh process, {RUNS} runs each):")
        print(f"{'file MiB':>9s} {'rows':>12s} {'rows/s':>12s} {'base MiB':>9s} {'peak MiB':>9s}")
        for size in (LARGE_BYTES // SMALL_FRACTION, LARGE_BYTES):
            path = root / "large.json"
            _write_large_array(path, size)
            runs = [_fresh_process_read(path) for _ in range(RUNS)]
            peak = max(r["peak_kib"] for r in runs) / 1024
            base = max(r["base_kib"] for r in runs) / 1024
            rate = statistics.median(r["rows"] / r["seconds"] for r in runs)
            rows = int(runs[0]["rows"])
            print(f"{path.stat().st_size / MIB:9.0f} {rows:12,d} {rate:12,.0f} {base:9.0f} {peak:9.0f}")
            path.unlink()


if __name__ == "__main__":
    main()
