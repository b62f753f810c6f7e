"""The one-container service of users' CI (role ``local``) on a host of its own.

A client on another host connects to its published port, as a project's
integration tests would with ``SPARK_REMOTE``; the container's healthcheck is
what says it is ready.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster.cluster import Client, Cluster
from tests.integration.cluster.conftest import TIMINGS
from tests.integration.cluster.netns import Network

PRIVATE = ".connect-plugin"


@pytest.fixture(scope="module")
def single(network: Network, tmp_path_factory: pytest.TempPathFactory) -> Cluster:
    cluster = Cluster.single(network, tmp_path_factory.mktemp("single"))
    TIMINGS["single container (role local) start-up to healthy"] = cluster.start_all()
    return cluster


@pytest.fixture(scope="module")
def single_client(single: Cluster) -> Iterator[Client]:
    with single.client() as running:
        yield running


def test_temp_tables_and_scans_work_from_another_host(
    single: Cluster, single_client: Client
) -> None:
    client = single_client
    session_id = client.open("ci")
    data = single.root / "data" / "rows.json"
    data.parent.mkdir()
    data.write_text("".join(json.dumps({"id": i, "s": str(i)}) + "\n" for i in range(100)))
    assert client.sql("ci", "CREATE TEMPORARY TABLE t AS SELECT id FROM range(1000)") == [
        ["t", 1000]
    ]
    assert client.scan("ci", str(data), ["count(*)", "sum(id)"], format="json") == [
        [100, sum(range(100))]
    ]
    assert client.sql("ci", "SELECT count(*) FROM t JOIN range(10) USING (id)") == [[10]]
    assert (single.workspace / session_id).is_dir()
    client.stop("ci")
    assert [path.name for path in single.workspace.iterdir()] == [PRIVATE]


def test_the_embedded_server_listens_on_loopback_only(single: Cluster) -> None:
    log = Path(single.log("local")).read_text()
    assert f"gateway listening on {single.address('local')}:" in log
    assert "starting Spark Connect on 127.0.0.1:" in log
