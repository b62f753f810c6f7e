"""``connect-plugin-python`` takes Spark's bytecode-less pyspark.zip off a worker's path."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pyspark

from connect_plugin.worker_python import installed_version, worker_path, zip_version

SPARK_ZIP = Path(pyspark.__file__).parent / "python" / "lib" / "pyspark.zip"


def test_the_zip_of_the_installed_version_leaves_the_path(tmp_path: Path) -> None:
    other = tmp_path / "other" / "pyspark.zip"
    other.parent.mkdir()
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("pyspark/version.py", '__version__: str = "3.5.0"\n')
    assert zip_version(str(SPARK_ZIP)) == installed_version() == pyspark.__version__
    path = os.pathsep.join([str(SPARK_ZIP), "/a/py4j-src.zip", str(other), "/session/files"])
    assert worker_path(path, installed_version()).split(os.pathsep) == [
        "/a/py4j-src.zip",
        str(other),
        "/session/files",
    ]
    assert worker_path(path, None) == path
    assert worker_path("", "4.3.0") == ""


def test_a_worker_started_by_the_launcher_imports_pyspark_from_site_packages() -> None:
    """What Spark runs: the interpreter with the zip first on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": str(SPARK_ZIP)}
    code = ["-c", "import pyspark; print(pyspark.__file__)"]
    direct = subprocess.run([sys.executable, *code], env=env, capture_output=True, text=True)
    assert direct.stdout.strip().startswith(str(SPARK_ZIP))
    launched = subprocess.run(
        [sys.executable, "-m", "connect_plugin.worker_python", *code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert launched.stdout.strip() == pyspark.__file__
