"""Which keys of a json file name the columns a scan decodes, as the file spells them.

pyarrow's json reader matches keys exactly: asked for ``id``, it leaves ``ID`` out, and a
value would be lost in silence. So the reader keeps, per file, the spellings it has seen
of each decoded column (at first the table's own), asks pyarrow for each of them, and
before each block asks whether the block may hold another (``may_hide``). When every
spelling known is lower case, a block without the capital of any letter of the names
cannot: another spelling of a name has the capital of one of its letters. Any other
block is searched: a name in lower case no known spelling has, between quotes, or a
quoted token around an upper-case letter that folds to a name but is no spelling of it
known, is another spelling. What an ASCII fold cannot see (a column name outside ASCII,
a key character written as a ``\\u`` escape, a character outside ASCII that folds into
ASCII, as the sharp s folds to ``ss``) makes a block suspect too. A suspect block is
parsed once with every key inferred, which shows its keys as pyarrow decodes them
(``learn``); when that finds new spellings, the block is parsed again asking for them by
their read types, since pyarrow's inference loses leading nulls of lists
(apache/arrow#51305).

The first test is a byte search per letter of the names: 16 letters take 3 ms over 8 MB
of json lines, which pyarrow parses in 135 ms (``bytes.lower`` and a comparison took
10 ms). The search, a few numpy passes and the tokens around upper-case letters, costs
more with more such letters (``python -m benchmarks scan`` measures the first; json
with upper-case keys or text pays the second).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from connect_plugin.scanning.formats.base import Decode
from connect_plugin.scanning.names import fold

_ESCAPED_KEY_CHARACTER = re.compile(
    rb"\\u00[2-7][0-9a-fA-F]|\\u00[dD][fF]|\\u1[eE]9[eE]|\\u212[aA]|\\u017[fF]"
    rb"|\\u[fF][bB]0[0-6]"
)
"""A ``\\u`` escape of a printable ASCII character or of a character that folds to ASCII."""

_FOLDING_TO_ASCII = (b"\xc3\x9f", b"\xe1\xba\x9e", b"\xe2\x84\xaa", b"\xc5\xbf", b"\xef\xac")
"""UTF-8 of the characters outside ASCII that case folding turns into ASCII letters: the
sharp s and its capital (ss), the Kelvin sign, the long s and the Latin ligatures (ff, fi,
fl, ffi, ffl, st)."""


Bytes = npt.NDArray[np.uint8]

_QUOTE = ord('"')
_A = np.uint8(ord("A"))
_LETTERS = np.uint8(26)
_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A") : ord("Z") + 1] += ord("a") - ord("A")
"""Each byte with ASCII letters folded to lower case, as a lookup table."""


class JsonKeys:
    """The spellings of each decoded column seen so far in one file."""

    def __init__(self, decode: Decode, read_types: dict[str, pa.DataType]) -> None:
        self.wanted = decode.wanted
        self.read_types = read_types
        self.spellings: dict[str, list[str]] = {f.name: [f.name] for f in decode.fields}
        self.members = {name for f in decode.fields for name in _member_names(f.type)}
        names = [*self.wanted, *self.members]
        self._folded_ascii = all(name.isascii() for name in names)
        self._make_probes()

    def _make_probes(self) -> None:
        """Per length, each name lowered with every spelling of it known of that length, as
        bytes (a spelling with a character outside ASCII, as the Kelvin sign of ``oK``, is
        longer, and the blocks that hold one are suspect anyway); and the quoted lower-case
        names no spelling has (a variant without an upper-case letter)."""
        known: dict[str, set[str]] = {}
        for name in [*self.members, *(s for each in self.spellings.values() for s in each)]:
            known.setdefault(name.lower(), set()).add(name)
        self._lower_case = all(lowered in names for lowered, names in known.items())
        letters = {c for lowered in known for c in lowered if "a" <= c <= "z"}
        self._capitals = [c.upper().encode() for c in sorted(letters)]
        self._by_length: dict[int, list[tuple[Bytes, list[Bytes]]]] = {}
        for lowered, names in known.items():
            width = len(lowered.encode())
            spelled = [name.encode() for name in names]
            exact = [np.frombuffer(name, np.uint8) for name in spelled if len(name) == width]
            entry = (np.frombuffer(lowered.encode(), np.uint8), exact)
            self._by_length.setdefault(width, []).append(entry)
        self._unspelled = [
            b'"' + lowered.encode() + b'"' for lowered, names in known.items() if lowered not in names
        ]

    def read_fields(self) -> list[pa.Field]:
        """A field per spelling of each decoded column, in its column's read type."""
        return [
            pa.field(spelling, self.read_types[column])
            for column, spellings in self.spellings.items()
            for spelling in spellings
        ]

    def may_hide(self, block: bytes) -> bool:
        """Whether the block may spell a decoded column, or a member of one, in a way not
        seen yet."""
        if not self._by_length:
            return False
        if not self._folded_ascii:
            return True
        if b"\\" in block and _ESCAPED_KEY_CHARACTER.search(block):
            return True
        if not block.isascii() and any(mark in block for mark in _FOLDING_TO_ASCII):
            return True
        if self._lower_case and not any(capital in block for capital in self._capitals):
            return False
        if any(quoted in block for quoted in self._unspelled):
            return True
        return self._upper_case_tokens_hide(block)

    def _upper_case_tokens_hide(self, block: bytes) -> bool:
        """Whether a quoted token with an upper-case letter folds to a name without being a
        spelling of it known: found by numpy, token by token around each such letter."""
        data = np.frombuffer(block, np.uint8)
        upper = np.flatnonzero((data - _A) < _LETTERS)
        quotes = np.flatnonzero(data == _QUOTE)
        if not upper.size or quotes.size < 2:
            return False
        closing = np.searchsorted(quotes, upper)
        closing = np.unique(closing[(closing > 0) & (closing < quotes.size)])
        starts = quotes[closing - 1] + 1
        lengths = quotes[closing] - starts
        for length, entries in self._by_length.items():
            at = starts[lengths == length]
            if not at.size:
                continue
            tokens = data[at[:, None] + np.arange(length)]
            lowered = _LOWER[tokens]
            for name, exact in entries:
                found = tokens[(lowered == name).all(axis=1)]
                if not found.size:
                    continue
                spelled = np.zeros(len(found), dtype=bool)
                for spelling in exact:
                    spelled |= (found == spelling).all(axis=1)
                if not spelled.all():
                    return True
        return False

    def learn(self, schema: pa.Schema) -> bool:
        """Take the spellings of decoded columns among a block's keys; whether any is new.

        A struct member that a block spells two ways (``{"m": {"a": 1}}``,
        ``{"m": {"A": 2}}``) is refused (``ArrowInvalid``), so that the row path,
        whose conversion folds members, reads the file on.
        """
        new = False
        for found in schema:
            column = self.wanted.get(fold(found.name))
            if column is None:
                continue
            if _has_twins(found.type):
                raise pa.ArrowInvalid(
                    f"a member of column '{column}' is spelled in two ways that differ in case"
                )
            if found.name not in self.spellings[column]:
                self.spellings[column].append(found.name)
                new = True
        if new:
            self._make_probes()
        return new


def _member_names(arrow_type: pa.DataType) -> Iterator[str]:
    """The names of the struct members inside a type, at any depth."""
    types = pa.types
    if types.is_list(arrow_type) or types.is_large_list(arrow_type):
        yield from _member_names(arrow_type.value_type)
    elif types.is_map(arrow_type):
        yield from _member_names(arrow_type.item_type)
    elif types.is_struct(arrow_type):
        for index in range(arrow_type.num_fields):
            member = arrow_type.field(index)
            yield member.name
            yield from _member_names(member.type)


def _has_twins(arrow_type: pa.DataType) -> bool:
    """Whether a struct inside the type has two members whose names fold together."""
    types = pa.types
    if types.is_list(arrow_type) or types.is_large_list(arrow_type):
        return _has_twins(arrow_type.value_type)
    if types.is_map(arrow_type):
        return _has_twins(arrow_type.item_type)
    if not types.is_struct(arrow_type):
        return False
    members = [arrow_type.field(i) for i in range(arrow_type.num_fields)]
    if len({fold(m.name) for m in members}) < len(members):
        return True
    return any(_has_twins(m.type) for m in members)
