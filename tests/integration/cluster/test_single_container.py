"""The one-container service of users' CI (role ``local``) on a host of its own.

A client on another host connects to its published port, as a project's
integration tests would with ``SPARK_REMOTE``; the container's healthcheck is
what says it is ready.
"""

from __future__ import annotations

import json

import pytest

from connect_plugin.server.sessions.workspace import PRIVATE_DIR
from tests.integration.cluster.cluster import Client, Cluster
from tests.integration.cluster.netns import Network


@pytest.fixture(scope="module")
def cluster(network: Network, tmp_path_factory: pytest.TempPathFactory) -> Cluster:
    return Cluster.single(network, tmp_path_factory.mktemp("single")).started("single container")


def test_temp_tables_and_scans_work_from_another_host(cluster: Cluster, client: Client) -> None:
    session_id = client.open("ci")
    data = cluster.root / "data" / "rows.json"
    data.parent.mkdir()
    data.write_text("".join(json.dumps({"id": i, "s": str(i)}) + "\n" for i in range(100)))
    assert client.sql("ci", "CREATE TEMPORARY TABLE t AS SELECT id FROM range(1000)") == [
        ["t", 1000]
    ]
    assert client.scan("ci", str(data), ["count(*)", "sum(id)"], format="json") == [
        [100, sum(range(100))]
    ]
    assert client.sql("ci", "SELECT count(*) FROM t JOIN range(10) USING (id)") == [[10]]
    assert (cluster.workspace / session_id).is_dir()
    client.stop("ci")
    assert [path.name for path in cluster.workspace.iterdir()] == [PRIVATE_DIR]


def test_the_embedded_server_listens_on_loopback_only(cluster: Cluster) -> None:
    log = cluster.log("local").read_text()
    assert f"gateway listening on sc://{cluster.address('local')}:" in log
    assert "starting Spark Connect on 127.0.0.1:" in log
