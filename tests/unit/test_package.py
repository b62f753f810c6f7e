"""The package's public surface: what ``import connect_plugin`` gives a user."""

from __future__ import annotations

import inspect
import subprocess
import sys

import connect_plugin
from connect_plugin.client.scan import scan


def test_scan_is_the_client_function_with_its_signature() -> None:
    assert connect_plugin.scan is scan
    parameters = inspect.signature(connect_plugin.scan).parameters
    assert list(parameters)[:2] == ["spark", "paths"]
    assert parameters["format"].kind is inspect.Parameter.KEYWORD_ONLY


def test_the_scan_core_imports_no_spark_client() -> None:
    code = (
        "import sys, connect_plugin.scanning, connect_plugin.scanning.plan; "
        "print(sorted(m for m in sys.modules if m.startswith(('pyspark', 'grpc'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
