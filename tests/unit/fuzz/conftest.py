"""The ``fuzzer`` fixture: each fuzz test's even share of the session's fuzzing seconds."""

from __future__ import annotations

import pytest

from tests.unit.fuzz.harness import STATS, Fuzzer, fuzz_seconds


@pytest.fixture
def fuzzer(request: pytest.FixtureRequest) -> Fuzzer:
    session = request.session
    fuzzed = [i for i in session.items if "fuzzer" in getattr(i, "fixturenames", ())]
    share = fuzz_seconds(request.config) / max(len(fuzzed), 1)
    stats = request.config.stash.setdefault(STATS, [])
    return Fuzzer(share, stats)
