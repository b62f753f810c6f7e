"""The Python API on the thin ``pyspark-client`` (no JVM jars), through the gateway.

The thin client is installed without dependencies into a virtualenv of its
own, which borrows pyarrow, pandas, grpcio and connect_plugin from the test
environment through a site directory placed after its own site-packages.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from connect_plugin.server.gateway import Gateway

THIN_CLIENT = "pyspark-client>=4.2,<4.4"
SCRIPT = Path(__file__).with_name("thin_client_session.py")


@pytest.fixture(scope="module")
def thin_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("thin-client") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    borrowed = sysconfig.get_paths()["purelib"]
    Path(site, "borrowed-from-tests.pth").write_text(f"import site; site.addsitedir({borrowed!r})\n")
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", THIN_CLIENT],
        capture_output=True, text=True, timeout=300,
    )
    if installed.returncode != 0:
        pytest.fail(f"could not install {THIN_CLIENT}: {installed.stderr[-2000:]}")
    return python


def test_temp_tables_from_the_thin_client(thin_python: Path, gateway: Gateway) -> None:
    done = subprocess.run(
        [str(thin_python), str(SCRIPT), gateway.address],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["jars"] is False, "the thin client must not ship Spark's jars"
    assert seen["created"] == ["thin_t", 10]
    assert seen["sql"] == [["thin_sql", 1]]
    assert seen["count"] == 5
    assert seen["listed"] == ["thin_sql", "thin_t"]
    assert seen["dropped"] == [True, "Temporary table [thin_t] dropped"]
