"""The two endpoints of the transparency suite, and each case's outcome at each, once per run."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from connect_plugin.server.gateway import Gateway
from tests.integration.support import Upstream
from tests.integration.transparency.cases import Case, Outcome, outcome_of


@pytest.fixture(scope="session")
def addresses(upstream: Upstream, gateway: Gateway) -> dict[str, str]:
    """``direct``: the test session's Spark Connect server; ``gateway``: the gateway in front."""
    return {"direct": upstream.address, "gateway": gateway.address}


@pytest.fixture(scope="session")
def outcome(addresses: dict[str, str]) -> Callable[[Case, str], Outcome]:
    """A case's outcome at an endpoint, run once per test session, so the gateway's test
    compares with the direct outcome of the same run."""
    seen: dict[tuple[str, str], Outcome] = {}

    def of(case: Case, endpoint: str) -> Outcome:
        key = (case.name, endpoint)
        if key not in seen:
            seen[key] = outcome_of(case.run, addresses[endpoint])
        return seen[key]

    return of
