"""The differential scan test's time budget and the "scan differential" summary section.

``--scan-fuzz-seconds`` (``DEFAULT_SECONDS`` unless given) is split evenly
between the generative differential tests. Without the option a run is
derandomized, so CI draws the same cases every time and a red CI is
reproduced by running it again; given the option, each run draws new
cases and shrinks what it finds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest

DEFAULT_SECONDS = 50.0
"""The generative tests' share of a default run (the fixed finds run on top)."""
OPTION = "--scan-fuzz-seconds"


@dataclass
class RouteStats:
    """What one generative test ran: cases (data sets), queries and comparisons per reference."""

    name: str
    cases: int = 0
    queries: int = 0
    compared: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    finds: list[str] = field(default_factory=list)

    def line(self) -> str:
        references = ", ".join(f"{n} {name}" for name, n in sorted(self.compared.items()))
        return (
            f"{self.name}: {self.cases} data sets, {self.queries} queries in {self.seconds:.1f} s "
            f"(compared: {references or 'none'}), {len(self.finds)} finds"
        )


STATS = pytest.StashKey[list[RouteStats]]()


def requested_seconds(config: pytest.Config) -> float | None:
    seconds: float | None = config.getoption(OPTION)
    return seconds


def total_seconds(config: pytest.Config) -> float:
    seconds = requested_seconds(config)
    return DEFAULT_SECONDS if seconds is None else seconds


def summary(config: pytest.Config) -> list[str]:
    """The lines of the session's "scan differential" section (none when nothing ran)."""
    stats = config.stash.get(STATS, [])
    if not stats:
        return []
    cases = sum(s.cases for s in stats)
    queries = sum(s.queries for s in stats)
    seconds = sum(s.seconds for s in stats)
    finds = sum(len(s.finds) for s in stats)
    total = f"total: {cases} data sets, {queries} queries in {seconds:.1f} s, {finds} finds"
    return [s.line() for s in stats] + [total]
