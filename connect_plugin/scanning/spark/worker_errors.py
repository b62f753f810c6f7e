"""How scan errors leave Spark's Python workers: class and cause first, traceback short.

Spark turns an exception in a worker into its own error (``PYTHON_DATA_SOURCE_ERROR``
while planning, ``PYTHON_EXCEPTION`` while reading) whose message is the
worker's formatted traceback, and cuts the status it sends the client at
2048 characters. The cause is on the traceback's last line, which a deep
traceback, or a chain of causes, pushes past that cut. So at every method
Spark calls, a ``ScanError`` leaves with its message led by its error class
(``errors.marked_message``, which the gateway looks for) and its traceback
cut to the frame that raised it; its cause is already in its message.

Any other exception becomes a scan error too (``unexpected``), naming the
file being read where there is one: pyarrow's own errors and the operating
system's (a file that is not what its format says, or changed since
planning) are ``UnreadableFile``; anything else is a fault of the scan's own
code, ``ScanInternalError``. Its whole traceback goes to the worker's log,
which Spark keeps in its own, before it leaves as the others do.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

import pyarrow as pa

from connect_plugin.errors import ScanError, ScanInternalError, UnreadableFile, marked_message

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

log = logging.getLogger(__name__)

_FILE_FAULTS = (pa.ArrowException, OSError, UnicodeError)
"""Exceptions that say a file cannot be read as the scan reads it, not that the scan is wrong."""


def reportable(exc: ScanError) -> ScanError:
    """``exc`` ready to leave the worker: marked message, one frame of traceback, no chain."""
    exc.args = (marked_message(exc),)
    raised_at = exc.__traceback__
    while raised_at is not None and raised_at.tb_next is not None:
        raised_at = raised_at.tb_next
    exc.__cause__ = None
    exc.__suppress_context__ = True
    return exc.with_traceback(raised_at)


def unexpected(exc: Exception, url: str | None = None, doing: str = "planning the scan") -> ScanError:
    """The scan error an exception that is none becomes, once its traceback is logged.

    ``url``: the file being read when it was raised; else ``doing`` says what the scan did.
    """
    where = doing if url is None else f"reading file {url}"
    log.error("the scan failed %s", where, exc_info=exc)
    cause = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    if url is not None and isinstance(exc, _FILE_FAULTS):
        return UnreadableFile(f"cannot read file {url}: {cause}")
    return ScanInternalError(
        f"the scan failed {where} with an error of its own code ({cause}); this is a fault "
        "of connect-plugin, not of the files: please report it (the Python traceback is in "
        "the Spark server's log)"
    )


@contextmanager
def reading(url: str) -> Iterator[None]:
    """Any exception of the block that is no scan error becomes one naming the file ``url``."""
    try:
        yield
    except ScanError:
        raise
    except Exception as exc:
        raise unexpected(exc, url=url) from exc


def reported(method: Callable[P, R]) -> Callable[P, R]:
    """``method`` (one Spark calls in a worker), raising its errors as reportable scan errors."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except ScanError as exc:
            raise reportable(exc) from None
        except Exception as exc:
            raise reportable(unexpected(exc)) from None

    return call


def reported_batches(method: Callable[P, Iterator[T]]) -> Callable[P, Iterator[T]]:
    """``method`` returning an iterator Spark drains, raising its errors as reportable scan
    errors (name the file being read with ``reading``)."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        try:
            yield from method(*args, **kwargs)
        except ScanError as exc:
            raise reportable(exc) from None
        except Exception as exc:
            raise reportable(unexpected(exc, doing="reading")) from None

    return call
