"""Which keys of a json file name the columns a scan decodes, as the file spells them.

pyarrow's json reader matches keys exactly: asked for ``id``, it leaves ``ID`` out, and a
value would be lost in silence. So the reader keeps, per file, the spellings it has seen
of each decoded column (at first the table's own), asks pyarrow for each of them, and
before each block asks whether the block may hold another (``may_hide``): it counts each
column's name between quotes in the block as it is and folded to lower case, and the
counts differ when another spelling is there. What an ASCII fold cannot see (a column
name outside ASCII, a key character written as a ``\\u`` escape, a character outside
ASCII that folds into it) makes a block suspect too. A suspect block is parsed once with
every key inferred, which shows its keys as pyarrow decodes them (``learn``); when that
finds new spellings, the block is parsed again asking for them by their read types, since
pyarrow's inference loses leading nulls of lists (apache/arrow#51305).

A count is a few passes of ``bytes.count`` over the block, against the seconds pyarrow
takes to parse it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pyarrow as pa

from connect_plugin.scanning.formats.base import Decode
from connect_plugin.scanning.names import fold

_ESCAPED_KEY_CHARACTER = re.compile(
    rb"\\u00[2-7][0-9a-fA-F]|\\u212[aA]|\\u017[fF]|\\u[fF][bB]0[0-6]"
)
"""A ``\\u`` escape of a printable ASCII character or of a character that folds to ASCII."""

_FOLDING_TO_ASCII = (b"\xe2\x84\xaa", b"\xc5\xbf", b"\xef\xac")
"""UTF-8 of the characters outside ASCII that case folding turns into ASCII letters: the
Kelvin sign, the long s and the Latin ligatures (ff, fi, fl, ffi, ffl, st)."""


class JsonKeys:
    """The spellings of each decoded column seen so far in one file."""

    def __init__(self, decode: Decode, read_types: dict[str, pa.DataType]) -> None:
        self.wanted = decode.wanted
        self.read_types = read_types
        self.spellings: dict[str, list[str]] = {f.name: [f.name] for f in decode.fields}
        self._folded_ascii = all(name.isascii() for name in self.wanted)
        self._probes = self._make_probes()

    def _make_probes(self) -> list[tuple[bytes, list[bytes]]]:
        return [
            (b'"' + column.lower().encode() + b'"', [b'"' + s.encode() + b'"' for s in spellings])
            for column, spellings in self.spellings.items()
        ]

    def read_fields(self) -> list[pa.Field]:
        """A field per spelling of each decoded column, in its column's read type."""
        return [
            pa.field(spelling, self.read_types[column])
            for column, spellings in self.spellings.items()
            for spelling in spellings
        ]

    def may_hide(self, block: bytes) -> bool:
        """Whether the block may spell a decoded column in a way not seen yet."""
        if not self.spellings:
            return False
        if not self._folded_ascii:
            return True
        if b"\\u" in block and _ESCAPED_KEY_CHARACTER.search(block):
            return True
        if not block.isascii() and any(mark in block for mark in _FOLDING_TO_ASCII):
            return True
        lowered = block.lower()
        for folded, exact in self._probes:
            if lowered.count(folded) != sum(block.count(spelled) for spelled in exact):
                return True
        return False

    def learn(self, keys: Iterable[str]) -> bool:
        """Take the spellings of decoded columns among a block's keys; whether any is new."""
        new = False
        for key in keys:
            column = self.wanted.get(fold(key))
            if column is not None and key not in self.spellings[column]:
                self.spellings[column].append(key)
                new = True
        if new:
            self._probes = self._make_probes()
        return new
