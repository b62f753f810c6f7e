"""Run every benchmark, or those named: python -m benchmarks [gateway] [loader] [temp_tables] [scan] [json_layouts] ..."""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = {
    "gateway": "benchmarks.gateway_bench",
    "loader": "benchmarks.loader_bench",
    "temp_tables": "benchmarks.temp_table_bench",
    "scan": "benchmarks.scan_bench",
    "json_layouts": "benchmarks.json_layout_bench",
}


def main(argv: list[str]) -> int:
    names = argv or list(BENCHMARKS)
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
        return 2
    for name in names:
        print(f"=== {name} ===", flush=True)
        module = importlib.import_module(BENCHMARKS[name])
        module.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
