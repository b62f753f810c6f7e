"""The states of a result set loader's batch, named as in Drill's ResultSetLoaderImpl.

::

    START ──start_batch──▶ ACTIVE ──row limit or byte limit reached──▶ FULL_BATCH
                             │                                            │
                             └──a value overflows the open row──▶ OVERFLOW│
                                                                   │      │
       HARVESTED ◀──harvest (no row waits)──────────────────────────┴──────┤
       LOOK_AHEAD ◀─harvest (the overflow row waits for the next batch)───┘
       HARVESTED / LOOK_AHEAD ──start_batch──▶ ACTIVE (FULL_BATCH if the waiting row fills it)
       any ──close──▶ CLOSED

Rows may be started only in ACTIVE; the row that overflowed is finished in
OVERFLOW and saved to the look-ahead batch. One enum replaces the flags
(active, full, overflow, closed, look-ahead) that each answered part of the
question "where is the batch".
"""

from __future__ import annotations

from enum import Enum


class LoaderState(Enum):
    START = "start"
    ACTIVE = "active"
    OVERFLOW = "overflow"
    FULL_BATCH = "full batch"
    HARVESTED = "harvested"
    LOOK_AHEAD = "look-ahead"
    CLOSED = "closed"

    @property
    def in_batch(self) -> bool:
        """Whether a batch is being built (started and not yet harvested)."""
        return self in _IN_BATCH

    @property
    def is_full(self) -> bool:
        return self is LoaderState.FULL_BATCH or self is LoaderState.OVERFLOW


_IN_BATCH = frozenset({LoaderState.ACTIVE, LoaderState.OVERFLOW, LoaderState.FULL_BATCH})
