"""One cluster of network namespaces per test module, torn down whatever the tests did.

The tests need root and iproute2. Where namespaces cannot be made they skip
with the reason, except under CI (``CI`` set), where that is a failure: the
cluster tests must run there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.integration.cluster.cluster import Client, Cluster
from tests.integration.cluster.netns import Network, unavailable_reason


@pytest.fixture(scope="session")
def namespaces() -> None:
    reason = unavailable_reason()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"the cluster tests must run in CI, but {reason}")
    pytest.skip(f"no network namespaces here: {reason}")


@pytest.fixture(scope="module")
def network(namespaces: None) -> Iterator[Network]:
    made = Network()
    try:
        yield made
    finally:
        made.close()
        assert made.leftovers() == [], f"namespaces or links left behind: {made.leftovers()}"


@pytest.fixture(scope="module")
def client(cluster: Cluster) -> Iterator[Client]:
    """The client host's agent, talking to the module's ``cluster`` through its gateway."""
    with cluster.client() as running:
        yield running

