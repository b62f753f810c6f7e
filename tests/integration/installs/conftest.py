"""Installs as users make them: a copy of the checkout, its built sdist and wheel, fresh venvs.

Every environment is made once per test session and shared by the tests
that need it; each one is reported (size, install time, key versions) at the
end of the run.
"""

from __future__ import annotations

import datetime
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.integration.installs.venvs import Dists, Venv, VenvCache, clean_env

CHECKOUT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def source_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout's files as a fresh clone would have them (tracked and new, never ignored),
    so that builds never see the checkout's .venv, build/ or egg-info."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=CHECKOUT, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    tree = tmp_path_factory.mktemp("source") / "connect-plugin"
    for name in filter(None, listed):
        source = CHECKOUT / name
        if source.is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, tree / name)
    return tree


@pytest.fixture(scope="session")
def dists(source_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """``python -m build``: the sdist, then the wheel built from the unpacked sdist."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(source_tree)],
        capture_output=True, text=True, timeout=600, env=clean_env(),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return Dists(sdist, wheel)


@pytest.fixture(scope="session")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> VenvCache:
    return VenvCache(tmp_path_factory.mktemp("venvs"))


@pytest.fixture(scope="session")
def thin_client(venvs: VenvCache, source_tree: Path) -> Venv:
    """``pip install "<checkout>[client]"`` in a fresh venv: the newest thin client and its
    newest dependencies. pytest is added after its size is taken, for the plugin's test."""
    return venvs.get(
        "thin client", f"{source_tree}[client]", then=lambda venv: venv.install("pytest")
    )


@pytest.fixture(scope="session")
def scan_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Files the API session scans: json that drifts across two year folders, a folder with
    a bad record beside a good one, and parquet with zoned timestamps and lists."""
    root = tmp_path_factory.mktemp("scan-data")
    (root / "logs" / "2024").mkdir(parents=True)
    (root / "logs" / "2025").mkdir(parents=True)
    (root / "logs" / "2024" / "a.json").write_text('{"id": 1, "ms": 5}\n{"id": 2, "ms": 7}\n')
    (root / "logs" / "2025" / "b.json").write_text(
        '{"id": 3, "ms": 1.5, "host": "h1"}\n{"id": 4, "ms": 2, "host": "h2"}\n'
    )
    (root / "parts" / "bad").mkdir(parents=True)
    (root / "parts" / "good").mkdir(parents=True)
    (root / "parts" / "bad" / "a.json").write_text('{"id": 8}\n{"id": \n')
    (root / "parts" / "good" / "a.json").write_text('{"id": 9}\n')
    (root / "events").mkdir()
    utc = datetime.timezone.utc
    pq.write_table(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int32()),
                "ts": pa.array(
                    [datetime.datetime(2024, 5, 1, 12, 30, tzinfo=utc), None],
                    pa.timestamp("us", tz="UTC"),
                ),
                "tags": pa.array([["a", "b"], []], pa.list_(pa.string())),
            }
        ),
        root / "events" / "a.parquet",
    )
    return root
