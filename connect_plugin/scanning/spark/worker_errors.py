"""How scan errors leave Spark's Python workers: class and cause first, traceback short.

Spark turns an exception in a worker into its own error (``PYTHON_DATA_SOURCE_ERROR``
while planning, ``PYTHON_EXCEPTION`` while reading) whose message is the
worker's formatted traceback, and cuts the status it sends the client at
2048 characters. The cause is on the traceback's last line, which a deep
traceback, or a chain of causes, pushes past that cut. So at every method
Spark calls, a ``ScanError`` leaves with its message led by its error class
(``errors.marked_message``, which the gateway looks for) and its traceback
cut to the frame that raised it; its cause is already in its message. Any
other exception is a bug of ours and keeps its whole traceback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

from connect_plugin.errors import ScanError, marked_message

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


def reportable(exc: ScanError) -> ScanError:
    """``exc`` ready to leave the worker: marked message, one frame of traceback, no chain."""
    exc.args = (marked_message(exc),)
    raised_at = exc.__traceback__
    while raised_at is not None and raised_at.tb_next is not None:
        raised_at = raised_at.tb_next
    exc.__cause__ = None
    exc.__suppress_context__ = True
    return exc.with_traceback(raised_at)


def reported(method: Callable[P, R]) -> Callable[P, R]:
    """``method`` (one Spark calls in a worker), raising its scan errors reportable."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except ScanError as exc:
            raise reportable(exc) from None

    return call


def reported_batches(method: Callable[P, Iterator[T]]) -> Callable[P, Iterator[T]]:
    """``method`` returning an iterator Spark drains, raising its scan errors reportable."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        try:
            yield from method(*args, **kwargs)
        except ScanError as exc:
            raise reportable(exc) from None

    return call
