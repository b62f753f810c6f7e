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
from collections.abc import Iterator

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
        self.members = {name for f in decode.fields for name in _member_names(f.type)}
        names = [*self.wanted, *self.members]
        self._folded_ascii = all(name.isascii() for name in names)
        self._probes = self._make_probes()

    def _make_probes(self) -> list[tuple[bytes, list[bytes]]]:
        """Per name lowered, its quoted form and every quoted spelling of it known."""
        known: dict[str, set[str]] = {}
        for name in [*self.members, *(s for each in self.spellings.values() for s in each)]:
            known.setdefault(name.lower(), set()).add(name)
        return [
            (b'"' + lowered.encode() + b'"', [b'"' + name.encode() + b'"' for name in names])
            for lowered, names in known.items()
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
        if not self._probes:
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
            self._probes = self._make_probes()
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
