"""The first draw of a generator, from a given seed, that reaches an edge: the generator
reach tests show per edge the seed whose draws reach it soonest, and keep them reaching it."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TypeVar

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st

T = TypeVar("T")

MAX_EXAMPLES = 300
"""How many draws a search takes before it gives up (``NoSuchExample``)."""


def first_reaching(
    strategy: st.SearchStrategy[T], predicate: Callable[[T], bool], seed: int
) -> T:
    """The first of ``strategy``'s draws from ``seed`` for which ``predicate`` holds."""
    return find(
        strategy,
        predicate,
        settings=settings(
            max_examples=MAX_EXAMPLES,
            phases=[Phase.generate],
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
        random=random.Random(seed),
    )
