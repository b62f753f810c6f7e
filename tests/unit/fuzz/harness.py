"""Running fuzz targets for a bounded time: no crash, no hang, no undocumented error.

A target is a function of one generated input. It passes when it returns or
raises one of the errors it documents; anything else, or more than
``INPUT_CPU_SECONDS`` of CPU time on one input, fails the test with the
input hypothesis shrank it to. The run's seconds (``--fuzz-seconds``, 30 by
default) are split evenly between the fuzz tests collected; each one feeds
its target rounds of fresh inputs until its share is spent. What every
target ran is printed in a "fuzzing" section at the end of the session.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

INPUT_CPU_SECONDS = 2.0
"""CPU time one input may take before it counts as a hang: the slowest seed takes 0.3-0.5 s
alone, and about twice that while the other test worker runs on the same core's sibling
(a fresh-clone run measured more than 1 s)."""
DEFAULT_SECONDS = 20.0
"""The whole run's fuzzing time unless ``--fuzz-seconds`` says otherwise."""
ROUND_EXAMPLES = 200
"""Inputs per hypothesis run; runs repeat until the target's share of time is spent."""
SHOWN_CHARS = 120


class InputTooSlow(Exception):
    """One input took more CPU time than ``INPUT_CPU_SECONDS``."""


@dataclass
class TargetStats:
    """What one target ran: inputs, seconds, finds and its slowest input."""

    name: str
    inputs: int = 0
    seconds: float = 0.0
    finds: int = 0
    slowest_seconds: float = 0.0
    slowest_input: str = ""

    def record(self, value: object, seconds: float) -> None:
        self.inputs += 1
        if seconds > self.slowest_seconds:
            self.slowest_seconds = seconds
            self.slowest_input = _shown(value)

    def line(self) -> str:
        return (
            f"{self.name}: {self.inputs} inputs in {self.seconds:.1f} s, {self.finds} finds; "
            f"slowest {self.slowest_seconds * 1000:.1f} ms on {self.slowest_input}"
        )


STATS = pytest.StashKey[list[TargetStats]]()


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}... ({len(text)} chars)"


@contextmanager
def cpu_limit(seconds: float) -> Iterator[None]:
    """Raise ``InputTooSlow`` in the body once it has used ``seconds`` of CPU time."""

    def expired(signum: int, frame: FrameType | None) -> None:
        raise InputTooSlow(f"one input took more than {seconds} s of CPU time")

    previous = signal.signal(signal.SIGPROF, expired)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def check(
    target: Callable[[Any], object], value: object, allowed: tuple[type[BaseException], ...]
) -> None:
    """Run ``target`` on ``value`` under the CPU limit; only ``allowed`` errors pass."""
    with cpu_limit(INPUT_CPU_SECONDS), suppress(*allowed):
        target(value)


class Fuzzer:
    """Runs targets for their share of the session's fuzzing time and records what they ran."""

    def __init__(self, seconds: float, stats: list[TargetStats]) -> None:
        self.seconds = seconds
        self._stats = stats

    def run(
        self,
        name: str,
        inputs: st.SearchStrategy[Any],
        target: Callable[[Any], object],
        allowed: tuple[type[BaseException], ...] = (),
    ) -> TargetStats:
        stats = TargetStats(name)
        self._stats.append(stats)

        @settings(
            max_examples=ROUND_EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(inputs)
        def one_round(value: object) -> None:
            started = time.process_time()
            try:
                check(target, value, allowed)
            finally:
                stats.record(value, time.process_time() - started)

        started = time.monotonic()
        try:
            while time.monotonic() - started < self.seconds:
                one_round()
        except Exception:
            stats.finds += 1
            raise
        finally:
            stats.seconds = time.monotonic() - started
        return stats


def fuzz_seconds(config: pytest.Config) -> float:
    seconds: float | None = config.getoption("--fuzz-seconds")
    return DEFAULT_SECONDS if seconds is None else seconds


def summary(config: pytest.Config) -> list[str]:
    """The lines of the session's fuzzing section (none when nothing was fuzzed)."""
    stats = config.stash.get(STATS, [])
    if not stats:
        return []
    inputs = sum(s.inputs for s in stats)
    seconds = sum(s.seconds for s in stats)
    finds = sum(s.finds for s in stats)
    total = f"total: {inputs} inputs in {seconds:.1f} s, {finds} finds"
    return [s.line() for s in stats] + [total]
