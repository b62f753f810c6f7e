"""Run every benchmark, or those named.

    python -m benchmarks [gateway] [gateway_profile] [gateway_instructions] [loader] [temp_tables] [dml] [scan] [pruning] [json_layouts] [rejects] [first_scan] [cluster] [engines]
    python -m benchmarks --remote sc://host:15002 [--shared-dir DIR] [--workspace DIR] [scan] [pruning] [temp_tables] [dml]

``--remote`` measures the scan and temp-table benchmarks through a running
gateway instead of the embedded stack (see ``benchmarks.server``);
``--json FILE`` also writes their figures there. ``cluster`` (root, iproute2)
brings up a standalone cluster in network namespaces and runs them on one
and two workers beside the embedded stack; it runs only when named, as do
``gateway_profile`` (py-spy's profile of the gateway under 8 clients),
``gateway_instructions`` (the gateway's instructions per query, under valgrind) and
``engines`` (share level ``user``: cold engines, memory, eight users).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from benchmarks.server import Options

BENCHMARKS = {
    "gateway": "benchmarks.gateway_bench",
    "gateway_profile": "benchmarks.gateway_profile",
    "gateway_instructions": "benchmarks.gateway_instructions",
    "loader": "benchmarks.loader_bench",
    "temp_tables": "benchmarks.temp_table_bench",
    "dml": "benchmarks.dml_bench",
    "scan": "benchmarks.scan_bench",
    "pruning": "benchmarks.pruning_bench",
    "json_layouts": "benchmarks.json_layout_bench",
    "rejects": "benchmarks.rejects_bench",
    "first_scan": "benchmarks.first_scan_bench",
    "cluster": "benchmarks.cluster_bench",
    "engines": "benchmarks.engines_bench",
}
ON_ANY_SERVER = ("temp_tables", "dml", "scan", "pruning")
"""The benchmarks that take a server (``--remote``) and return their figures."""
ONLY_WHEN_NAMED = ("cluster", "gateway_profile", "gateway_instructions", "engines")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="./dev bench", description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", metavar="name", help=", ".join(BENCHMARKS))
    parser.add_argument("--remote", help="the sc:// address of a running gateway to measure")
    parser.add_argument("--shared-dir", type=Path, help="a folder the server sees at this path")
    parser.add_argument("--workspace", type=Path, help="the remote gateway's workspace folder")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    return parser


def main(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    default = [name for name in BENCHMARKS if name not in ONLY_WHEN_NAMED]
    if args.remote:
        default = list(ON_ANY_SERVER)
    names = args.names or default
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:
        parser.error(
            f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}"
        )
    local_only = [name for name in names if name not in ON_ANY_SERVER]
    if args.remote and local_only:
        parser.error(f"--remote applies to {', '.join(ON_ANY_SERVER)}, not {', '.join(local_only)}")
    if args.remote and not args.remote.startswith("sc://"):
        parser.error(f"--remote {args.remote!r}: give the gateway's sc://host:port")
    options = Options(remote=args.remote, shared_dir=args.shared_dir, workspace=args.workspace)
    figures: dict[str, dict[str, float]] = {}
    for name in names:
        print(f"=== {name} ===", flush=True)
        module = importlib.import_module(BENCHMARKS[name])
        if name in ON_ANY_SERVER:
            figures[name] = module.main(options)
        else:
            module.main()
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
