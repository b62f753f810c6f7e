"""The laptop install: ``pip install "<checkout>[client]"`` in a fresh venv, then the whole API.

Nothing is borrowed from the test environment: the venv has its own
site-packages, the thin pyspark-client and no Spark jars, and the API
session runs in a subprocess of its Python against the test session's
gateway.
"""

from __future__ import annotations

from pathlib import Path

from connect_plugin.server.gateway import Gateway
from tests.integration.installs.api_check import assert_api_works
from tests.integration.installs.venvs import Venv


def test_the_thin_client_install_carries_no_spark_distribution(thin_client: Venv) -> None:
    installed = thin_client.distributions()
    assert "pyspark-client" in installed
    assert "pyspark" not in installed, "the [client] extra must not pull in full pyspark"
    assert not (thin_client.site_packages() / "pyspark" / "jars").exists()
    assert not list(thin_client.site_packages().rglob("*.jar"))
    assert thin_client.size_mb("pyspark") < 50, f"{thin_client.size_mb('pyspark'):.0f} MB"


def test_the_whole_api_runs_on_the_thin_client(
    thin_client: Venv, gateway: Gateway, scan_data: Path
) -> None:
    seen = assert_api_works(thin_client, gateway.address, scan_data)
    assert seen["jars"] is False
