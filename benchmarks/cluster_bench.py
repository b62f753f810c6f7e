"""Scan and CTTAS figures on a standalone cluster of one and two workers, beside the embedded stack.

The cluster is the cluster tests' own (``tests/integration/cluster``): the
image's entrypoint, one role per network namespace, the gateway in front.
The scan and temp-table benchmarks run on the cluster's client host with
``--remote`` against its gateway, their files in a folder every host sees at
the same path. Every configuration has the machine's cores as executor cores:
one worker with all of them, or two workers with half each, against the
embedded stack's ``local[*]``. Also timed: each cluster's start-up (every
role healthy, every worker's executor registered) and the single container's
(role ``local``) time to healthy, whose target is under a minute.
Needs root and iproute2 (``ip netns``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import scan_bench, temp_table_bench
from benchmarks.server import Options
from tests.image import REPO
from tests.integration.cluster.cluster import Cluster
from tests.integration.cluster.netns import Network, unavailable_reason

WORKER_COUNTS = (1, 2)
SINGLE_HEALTHY_TARGET_S = 60.0
SERVER_BENCHMARKS = {"scan": scan_bench, "temp_tables": temp_table_bench}


def _on_cluster(workers: int) -> tuple[float, dict[str, dict[str, float]]]:
    """Start-up seconds and the benchmarks' figures on a cluster of ``workers`` workers."""
    cores = max(1, (os.cpu_count() or 1) // workers)
    with tempfile.TemporaryDirectory(prefix="cluster-bench-") as folder, Network() as network:
        root = Path(folder)
        cluster = Cluster.standalone(network, root, workers=workers, cores=cores)
        started = cluster.start_all()
        print(f"--- {workers} worker(s) x {cores} core(s): up in {started:.1f} s", flush=True)
        shared, figures = root / "shared", root / "figures.json"
        shared.mkdir()
        command = [sys.executable, "-m", "benchmarks", "--remote", cluster.gateway_url]
        command += ["--shared-dir", str(shared), "--workspace", str(cluster.workspace)]
        command += ["--json", str(figures), *SERVER_BENCHMARKS]
        subprocess.run(
            cluster.hosts["client"].command(command),
            env=cluster.env("client"),
            cwd=REPO,
            check=True,
        )
        return started, json.loads(figures.read_text())


def _single_container() -> float:
    with tempfile.TemporaryDirectory(prefix="cluster-bench-") as folder, Network() as network:
        return Cluster.single(network, Path(folder)).start_all()


def main() -> None:
    reason = unavailable_reason()
    if reason is not None:
        print(f"skipped: no network namespaces here ({reason})")
        return
    columns = {
        "embedded": {name: bench.main(Options()) for name, bench in SERVER_BENCHMARKS.items()}
    }
    startup = {}
    for workers in WORKER_COUNTS:
        label = f"{workers} worker{'s' if workers > 1 else ''}"
        startup[label], columns[label] = _on_cluster(workers)
    single = _single_container()

    print("seconds (median of each benchmark's runs); cluster runs through its gateway's host:")
    print(f"  {'':44}" + "".join(f"{label:>14}" for label in columns))
    for name in SERVER_BENCHMARKS:
        for figure in columns["embedded"][name]:
            cells = "".join(f"{columns[label][name][figure]:>14.3f}" for label in columns)
            print(f"  {name + ' ' + figure:44}" + cells)
    for label, seconds in startup.items():
        print(f"start-up of the cluster with {label}: {seconds:.1f} s")
    verdict = "met" if single < SINGLE_HEALTHY_TARGET_S else "MISSED"
    print(
        f"single container (role local) healthy after {single:.1f} s "
        f"(target < {SINGLE_HEALTHY_TARGET_S:.0f} s: {verdict})"
    )
