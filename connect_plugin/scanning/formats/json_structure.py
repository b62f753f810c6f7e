"""Where the records of array and document json files begin and end, found with numpy.

A top-level array (``[{...}, {...}]``) or objects one after another
(pretty-printed, or ``{...}{...}``) cannot be cut into records at line
breaks. Records are cut instead at the structural bytes of the text, found
a block at a time without parsing a value: the quotes that are not escaped
mark the strings, the brackets outside strings give the nesting depth, and
the commas at depth 1 of a top-level array separate its elements. This is
the first stage of simdjson, done with whole-array numpy operations, so a
block costs a few passes over its bytes whatever it holds.

The file is then a sequence of regions between those events: a *gap* at
depth 0 (white space, or a stray scalar), the *content* of a top-level
object, or an *element* of a top-level array. What a record is depends on
the layout (``JsonLayout``): for ``documents`` each top-level value, for
``array`` each element of a top-level array. Anything else that is not
white space (a top-level scalar, an object outside the array, an array
among documents) is still one unit, reported as a bad record with its
place, never dropped and never an empty row.

The scanner state carried from one block to the next (``Carry``) is small:
whether a string is open, whether the next byte is escaped, the depth, the
kind of the open top-level container, and the region in progress. A record
longer than a block simply makes the pending bytes longer; memory is
bounded by the block size and the longest record, not by the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum, IntEnum

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from connect_plugin.scanning.formats.json_layout import JsonLayout

BACKSLASH = ord("\\")
QUOTE = ord('"')
COMMA = ord(",")
CASE_BIT_OFF = 0xDF
"""Clears the one bit that tells ``{`` from ``[`` and ``}`` from ``]``."""
NEWLINE = ord("\n")
SPACE = ord(" ")
"""The highest byte json counts as white space (with tab, line feed and return below it)."""
WHITE_SPACE = b" \t\r\n"


class Event(IntEnum):
    """A structural byte outside strings, as ``_CODES`` maps bytes to it."""

    NONE = 0
    OPEN_OBJECT = 1
    OPEN_ARRAY = 2
    CLOSE_OBJECT = 3
    CLOSE_ARRAY = 4
    COMMA = 5


class Region(Enum):
    """What the bytes between two events are."""

    GAP = "gap"
    CONTENT = "content"
    ELEMENT = "element"


_CODES = np.zeros(256, dtype=np.int8)
_CODES[ord("{")] = Event.OPEN_OBJECT
_CODES[ord("[")] = Event.OPEN_ARRAY
_CODES[ord("}")] = Event.CLOSE_OBJECT
_CODES[ord("]")] = Event.CLOSE_ARRAY
_CODES[ord(",")] = Event.COMMA

_DELTA = np.zeros(len(Event), dtype=np.int64)
_DELTA[[Event.OPEN_OBJECT, Event.OPEN_ARRAY]] = 1
_DELTA[[Event.CLOSE_OBJECT, Event.CLOSE_ARRAY]] = -1

Positions = npt.NDArray[np.int64]

Blocks = Iterator[bytes]


@dataclass
class Carry:
    """The scanner's state at the end of the bytes scanned so far."""

    in_string: bool = False
    escaped: bool = False
    depth: int = 0
    top: Event = Event.NONE
    """The kind of the open depth-0 container (``OPEN_OBJECT`` or ``OPEN_ARRAY``)."""
    region: Region = Region.GAP
    dirty: bool = False
    """Whether the region in progress holds bytes other than white space."""
    broken: bool = False
    """A closing bracket without its opening one was seen: nothing after it can be cut."""


@dataclass(frozen=True)
class Boundaries:
    """The record-level events of one block: offsets in the block, and what each is."""

    positions: Positions
    events: npt.NDArray[np.int8]
    broken_at: int | None = None
    """Where a closing bracket without its opening one sits, if one does."""


def region_after(event: int, layout: JsonLayout) -> Region:
    """The region an event starts: a top-level array's elements are records only for ``array``."""
    if event == Event.OPEN_OBJECT:
        return Region.CONTENT
    if event == Event.OPEN_ARRAY:
        return Region.ELEMENT if layout is JsonLayout.ARRAY else Region.CONTENT
    if event == Event.COMMA:
        return Region.ELEMENT
    return Region.GAP


def boundaries(data: npt.NDArray[np.uint8], carry: Carry, layout: JsonLayout) -> Boundaries:
    """Opens and closes at depth 0 (and, for ``array``, commas of top-level arrays); updates ``carry``.

    A closing bracket that would make the depth negative ends the scan:
    ``broken_at`` names it and ``carry.broken`` is set.
    """
    size = len(data)
    escaped = _escaped_positions(data, carry)
    folded = data & CASE_BIT_OFF
    marked = data == QUOTE
    marked |= data == COMMA
    marked |= folded == ord("[")
    marked |= folded == ord("]")
    if escaped.size:
        marked[escaped[escaped < size]] = False
    positions = np.flatnonzero(marked)
    found = data[positions]
    quote = found == QUOTE
    quotes_before = np.cumsum(quote, dtype=np.int64)
    outside = ~quote & (((quotes_before + carry.in_string) & 1) == 0)
    carry.in_string = bool((carry.in_string + (int(quotes_before[-1]) if quotes_before.size else 0)) & 1)
    carry.escaped = bool(escaped.size and escaped[-1] == size)
    positions = positions[outside]
    events = _CODES[found[outside]]
    after = carry.depth + np.cumsum(_DELTA[events])
    before_depth = after - _DELTA[events]
    broken_at = None
    if after.size and after.min() < 0:
        first = int(np.argmax(after < 0))
        broken_at = int(positions[first])
        positions, events = positions[:first], events[:first]
        after, before_depth = after[:first], before_depth[:first]
        carry.broken = True
    opens = (before_depth == 0) & (after == 1)
    closes = (before_depth == 1) & (after == 0)
    keep = opens | closes
    if layout is JsonLayout.ARRAY:
        commas = (events == Event.COMMA) & (before_depth == 1)
        comma_at = np.flatnonzero(commas)
        if comma_at.size:
            open_at = np.flatnonzero(opens)
            owner = np.searchsorted(open_at, comma_at) - 1
            known = np.concatenate(([carry.top], events[open_at])).astype(np.int8)
            tops = known[owner + 1]
            keep[comma_at[tops == Event.OPEN_ARRAY]] = True
    if after.size:
        carry.depth = int(after[-1])
        open_at = np.flatnonzero(opens)
        if open_at.size:
            carry.top = Event(int(events[open_at[-1]]))
    return Boundaries(positions[keep], events[keep], broken_at)


def _escaped_positions(data: npt.NDArray[np.uint8], carry: Carry) -> Positions:
    """Offsets of the bytes a backslash escapes (``len(data)`` when the next block's first is)."""
    slashes = np.flatnonzero(data == BACKSLASH)
    escaped_first = carry.escaped and not (slashes.size and slashes[0] == 0)
    if not slashes.size:
        return np.array([0] if escaped_first else [], dtype=np.int64)
    breaks = np.flatnonzero(np.diff(slashes) != 1) + 1
    starts = slashes[np.concatenate(([0], breaks))]
    ends = slashes[np.concatenate((breaks - 1, [slashes.size - 1]))] + 1
    lengths = ends - starts
    if carry.escaped and starts[0] == 0:
        lengths[0] += 1
    found: Positions = ends[(lengths & 1) == 1].astype(np.int64)
    if escaped_first:
        found = np.concatenate((np.zeros(1, dtype=np.int64), found))
    return found


def _region_codes(layout: JsonLayout) -> npt.NDArray[np.int64]:
    """Per event code, the index in ``REGIONS`` of the region it starts."""
    return np.array([REGIONS.index(region_after(event, layout)) for event in Event], np.int64)


REGIONS = list(Region)
_GAP, _CONTENT, _ELEMENT = (REGIONS.index(r) for r in (Region.GAP, Region.CONTENT, Region.ELEMENT))


def count_units(blocks: Blocks, layout: JsonLayout) -> Iterator[int]:
    """Per block, the records and bad units that end in it, without decoding a value.

    The count is what ``units`` yields: every top-level value for
    ``documents``; for ``array`` every element of a top-level array and every
    top-level value that is not an array; and for both, each stretch of
    stray bytes between top-level values.
    """
    carry = Carry()
    after_codes = _region_codes(layout)
    for block in blocks:
        data = np.frombuffer(block, dtype=np.uint8)
        found = boundaries(data, carry, layout)
        if found.broken_at is not None:
            data = data[: found.broken_at]
        starts = np.concatenate(([0], found.positions + 1))
        ends = np.concatenate((found.positions, [len(data)]))
        kinds = np.concatenate(([REGIONS.index(carry.region)], after_codes[found.events]))
        dirty = _filled(data, starts, ends)
        dirty[0] |= carry.dirty
        done, done_kinds = dirty[:-1], kinds[:-1]
        if layout is JsonLayout.ARRAY:
            units = np.count_nonzero(found.events == Event.OPEN_OBJECT)
            units += np.count_nonzero(done & (done_kinds == _ELEMENT))
        else:
            units = np.count_nonzero(kinds[1:] == _CONTENT)
        units += np.count_nonzero(done & (done_kinds == _GAP))
        carry.region = REGIONS[int(kinds[-1])]
        carry.dirty = bool(dirty[-1])
        if carry.broken:
            yield int(units) + _open_unit(carry, layout) + 1
            return
        yield int(units)
    yield _open_unit(carry, layout)


def _filled(data: npt.NDArray[np.uint8], starts: Positions, ends: Positions) -> npt.NDArray[np.bool_]:
    """Per range ``[start, end)`` of ``data``, whether it holds a byte other than white space.

    Every json byte that is not white space is above the space character.
    One ``reduceat`` over the ranges and the single event bytes between
    them; an empty range would read its start, so it is masked.
    """
    solid = np.concatenate((data > SPACE, [False]))
    bounds = np.empty(2 * len(starts), dtype=np.int64)
    bounds[0::2] = starts
    bounds[1::2] = ends
    found: npt.NDArray[np.bool_] = np.logical_or.reduceat(solid, bounds)[0::2]
    return found & (ends > starts)


def _open_unit(carry: Carry, layout: JsonLayout) -> int:
    """Whether the region the bytes end in is a unit not counted yet (a stray tail, an element)."""
    if not carry.dirty or carry.region is Region.CONTENT:
        return 0
    return int(carry.region is Region.GAP or layout is JsonLayout.ARRAY)


@dataclass(frozen=True)
class Unit:
    """One record or bad unit of a file: its bytes, where it starts, and what it is."""

    text: bytes
    offset: int
    """Byte offset of its first byte in the (decompressed) file."""
    line: int
    """Line of its first byte, counting from 1."""
    region: Region
    """``ELEMENT``: an array element; ``CONTENT``: a top-level value in brackets; ``GAP``: strays."""
    top: Event = Event.NONE
    """For ``CONTENT``, whether it is an object or an array."""


@dataclass
class _Cursor:
    """The row path's walk through a file: pending bytes, where they start, the line there."""

    buffer: bytes = b""
    base: int = 0
    line: int = 1
    counted_to: int = 0
    start: int = 0
    """Offset in ``buffer`` where the region in progress starts."""

    def unit(self, start: int, end: int, region: Region, top: Event = Event.NONE) -> Unit:
        text = self.buffer[start:end]
        stripped = text.lstrip(WHITE_SPACE)
        start += len(text) - len(stripped)
        self.line += self.buffer.count(b"\n", self.counted_to, start)
        self.counted_to = start
        return Unit(stripped.rstrip(WHITE_SPACE), self.base + start, self.line, region, top)

    def blank(self, end: int) -> bool:
        return not self.buffer[self.start : end].strip(WHITE_SPACE)

    def trim(self) -> None:
        """Drop the bytes before the region in progress."""
        cut = self.start
        self.line += self.buffer.count(b"\n", self.counted_to, cut)
        self.buffer = self.buffer[cut:]
        self.base += cut
        self.counted_to = 0
        self.start = 0


def units(blocks: Blocks, layout: JsonLayout) -> Iterator[Unit]:
    """The units of a file given as blocks of bytes, each with its byte offset and line."""
    cursor = _Cursor()
    carry = Carry()
    for block in blocks:
        region, top = carry.region, carry.top
        found = boundaries(np.frombuffer(block, dtype=np.uint8), carry, layout)
        shift = len(cursor.buffer)
        cursor.buffer += block
        for position, event in zip(found.positions.tolist(), found.events.tolist(), strict=True):
            at = shift + position
            if region is Region.CONTENT:
                yield cursor.unit(cursor.start, at + 1, region, top)
            elif not cursor.blank(at):
                yield cursor.unit(cursor.start, at, region)
            region = region_after(event, layout)
            if event in (Event.OPEN_OBJECT, Event.OPEN_ARRAY):
                top = Event(event)
            cursor.start = at if region is Region.CONTENT else at + 1
        carry.region = region
        if found.broken_at is not None:
            at = shift + found.broken_at
            if not cursor.blank(at):
                yield cursor.unit(cursor.start, at, region, top)
            yield cursor.unit(at, at + 1, Region.GAP)
            return
        cursor.trim()
    if not cursor.blank(len(cursor.buffer)):
        yield cursor.unit(cursor.start, len(cursor.buffer), carry.region, carry.top)


def record_lines(blocks: Blocks, layout: JsonLayout) -> Iterator[bytes]:
    """The records of an array or documents file, one per line, in blocks of whole lines.

    pyarrow's json reader reads one record per line fastest, and reads a
    block of whole records without a chunker. Line breaks, which json
    allows only as white space, become spaces; the commas and brackets of a
    top-level array become line breaks, and so does the end of each
    top-level value. Whatever is not a record (a scalar, an array among
    documents) is left in place for pyarrow to refuse. An object outside
    the arrays of an ``array`` file, which pyarrow would take, and an
    unbalanced closing bracket raise ``ArrowInvalid`` as pyarrow does for
    what it refuses; the row path then reads the file on and reports them.
    """
    carry = Carry()
    pending = np.empty(0, dtype=np.uint8)
    for block in blocks:
        data = np.frombuffer(block, dtype=np.uint8).copy()
        found = boundaries(data, carry, layout)
        events, positions = found.events, found.positions
        if found.broken_at is not None:
            raise pa.ArrowInvalid("a closing bracket without its opening one")
        data[data == NEWLINE] = SPACE
        if layout is JsonLayout.ARRAY:
            if np.any(events == Event.OPEN_OBJECT):
                raise pa.ArrowInvalid("an object outside a top-level array")
            data[positions[events == Event.OPEN_ARRAY]] = SPACE
            ends = positions[(events == Event.COMMA) | (events == Event.CLOSE_ARRAY)]
            data[ends] = NEWLINE
            cut = int(ends[-1]) + 1 if ends.size else 0
        else:
            ends = positions[(events == Event.CLOSE_OBJECT) | (events == Event.CLOSE_ARRAY)]
            data = np.insert(data, ends + 1, NEWLINE)
            cut = int(ends[-1]) + len(ends) + 1 if ends.size else 0
        if cut:
            yield np.concatenate((pending, data[:cut])).tobytes()
            pending = data[cut:]
        else:
            pending = np.concatenate((pending, data))
    if pending.size:
        yield pending.tobytes()
