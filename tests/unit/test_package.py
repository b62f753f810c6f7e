"""The package's public surface: what ``import connect_plugin`` gives a user."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import tomllib

import connect_plugin
from connect_plugin.client.scan import scan


def test_scan_is_the_client_function_with_its_signature() -> None:
    assert connect_plugin.scan is scan
    parameters = inspect.signature(connect_plugin.scan).parameters
    assert list(parameters)[:2] == ["spark", "paths"]
    assert parameters["format"].kind is inspect.Parameter.KEYWORD_ONLY


def test_the_scan_core_imports_no_spark_client() -> None:
    code = (
        "import sys, connect_plugin.scanning, connect_plugin.scanning.planning.plan; "
        "print(sorted(m for m in sys.modules if m.startswith(('pyspark', 'grpc'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_wheel_lists_every_package_and_the_default_settings() -> None:
    """setuptools is given the packages by name (server_conf/ is mapped into the
    package), so a new subpackage missing from the list would be left out of the wheel."""
    root = Path(connect_plugin.__file__).resolve().parents[1]
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {
        ".".join(init.parent.relative_to(root).parts)
        for init in (root / "connect_plugin").rglob("__init__.py")
    }
    assert set(setuptools["packages"]) == found | {"connect_plugin.server_conf"}
    assert setuptools["package-dir"] == {"connect_plugin.server_conf": "server_conf"}
    assert (root / "server_conf" / "connect-plugin.toml").is_file()
