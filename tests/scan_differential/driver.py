"""Hypothesis drives the cases for a share of the time budget, and collects finds.

A case takes seconds (a scan, two reference reads, a few Spark queries), so
the budget is spent in as few hypothesis runs as possible, each ended by
``BudgetSpent`` once time is up. The default run is derandomized and does
not shrink: CI stays reproducible and bounded. A run given
``--scan-fuzz-seconds`` draws fresh cases and shrinks each find for at most
``SHRINK_SECONDS``, then goes on looking for disagreements of other kinds
until its time is spent; the test then fails with every find.

Each case is decided once: its outcome is kept by its ``repr``, so the
final replay hypothesis makes of a failing case fails again at no cost,
and a case drawn twice is not run twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.scan_differential.budget import RouteStats
from tests.scan_differential.runner import Case, Disagreement, Tally

SHRINK_SECONDS = 90.0
"""How long a long run shrinks one find before it reports what it has."""
MAX_EXAMPLES = 100_000
"""Never reached: a run ends when its time is spent."""


class BudgetSpent(Exception):
    """The test's share of time is spent: ends a hypothesis run that found nothing new."""


@dataclass
class _Round:
    """One hypothesis run's state: the find it is shrinking, if any."""

    deadline: float
    target: str | None = None
    shrink_until: float = 0.0


@dataclass
class Explorer:
    """Runs drawn cases through ``run`` until ``seconds`` are spent; ``finds`` holds what failed."""

    stats: RouteStats
    seconds: float
    long_run: bool
    run: Callable[[Case], Tally]
    finds: dict[str, Disagreement] = field(default_factory=dict)
    _outcomes: dict[str, Disagreement | None] = field(default_factory=dict)

    def explore(self, cases: st.SearchStrategy[Case]) -> None:
        started = time.monotonic()
        deadline = started + self.seconds
        try:
            while time.monotonic() < deadline:
                state = _Round(deadline)
                try:
                    self._one_run(cases, state)
                except Disagreement as found:
                    self.finds[found.signature] = found
                    self.stats.finds.append(found.signature)
                    if not self.long_run:
                        return
                except BudgetSpent:
                    return
        finally:
            self.stats.seconds += time.monotonic() - started

    def _one_run(self, cases: st.SearchStrategy[Case], state: _Round) -> None:
        phases = [Phase.generate, Phase.shrink] if self.long_run else [Phase.generate]

        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            database=None,
            derandomize=not self.long_run,
            phases=phases,
            report_multiple_bugs=False,
            suppress_health_check=list(HealthCheck),
        )
        @given(cases)
        def one_case(case: Case) -> None:
            self._decide(case, state)

        one_case()

    def _decide(self, case: Case, state: _Round) -> None:
        key = repr(case)
        if key in self._outcomes:
            known = self._outcomes[key]
            if known is not None and known.signature == state.target:
                raise known
            return
        now = time.monotonic()
        if state.target is None and now > state.deadline:
            raise BudgetSpent
        if state.target is not None and now > state.shrink_until:
            return
        self.stats.cases += 1
        try:
            tally = self.run(case)
        except Disagreement as found:
            self._outcomes[key] = found
            if found.signature in self.finds or state.target not in (None, found.signature):
                return
            if state.target is None:
                state.target, state.shrink_until = found.signature, now + SHRINK_SECONDS
            raise
        self._outcomes[key] = None
        self.stats.queries += tally.queries
        self.stats.compared.update(tally.compared)
