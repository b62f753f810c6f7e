"""How a scan matches names: one rule for every name it meets (docs/scans.md, "Names").

A scan meets names in ``columns``, in its provided schema, in its files (a json record's
keys, a csv header, a parquet schema), in struct members, in its options
(``rescued_column``) and among its implicit and partition columns. They all meet here:

- Two names are one when their case-folded forms are equal (``fold``), as Spark resolves
  names by default (``spark.sql.caseSensitive=false``); a column is spelled as the schema
  spells it, else as the first file that has it does.
- The keys of one file that fold together (``A`` in one record, ``a`` in another) are one
  column, as keys of different files are. A record that gives one column two values
  under keys that fold together is a bad record (``duplicate_keys``); with a rescued-data
  column, the value under the column's own spelling stays and the others are rescued
  under their keys. A key is never dropped in silence.
- Readers hand up every key that folds to a column the scan decodes, under the file's
  spelling (``KeyGroups``); ``merge_keys`` makes one column of them and finds the rows
  that give it two values.

Imports from the scan: nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc


def fold(name: str) -> str:
    """The form in which names are compared: Unicode case folding."""
    return name.casefold()


class KeyGroups:
    """The keys of a file (or of a block of one) grouped by the column they fold to.

    ``wanted`` maps the folded name of each column a reader decodes to the column; keys
    that fold to none of them are left out (the caller decides what they are).
    """

    def __init__(self, wanted: Mapping[str, str], keys: Iterable[str]) -> None:
        self.wanted = wanted
        self.groups: dict[str, list[str]] = {}
        for key in keys:
            column = wanted.get(fold(key))
            if column is not None:
                spellings = self.groups.setdefault(column, [])
                if key not in spellings:
                    spellings.append(key)

    def keys(self) -> list[str]:
        """Every key that names a wanted column, in the order the columns were given."""
        return [key for column in self.wanted.values() for key in self.groups.get(column, ())]

    def of(self, column: str) -> Sequence[str]:
        return self.groups.get(column, ())


class DuplicateKeys(Exception):
    """A row gives one column values under several of its keys (``keys``)."""

    def __init__(self, keys: Sequence[str], message: str) -> None:
        super().__init__(message)
        self.keys = tuple(keys)


def duplicate_keys(column: str, keys: Sequence[str]) -> str:
    """Why a record that gives one column several values is a bad record."""
    named = " and ".join(f"'{key}'" for key in keys)
    return (
        f"keys {named} differ only in case and give column '{column}' two values; names are "
        "compared without case, so rename one of the keys, or scan with a rescued_column to "
        "keep the value of each key"
    )


def merge_keys(arrays: Sequence[pa.Array]) -> tuple[pa.Array, pa.Array | None]:
    """One column of the arrays of a column's keys (nulls where a key is absent), and the
    rows where more than one of them has a value (None when there are none)."""
    if len(arrays) == 1:
        return arrays[0], None
    present = [pc.is_valid(array) for array in arrays]
    counts = pc.add(*[p.cast(pa.int8()) for p in present[:2]])
    for more in present[2:]:
        counts = pc.add(counts, more.cast(pa.int8()))
    twice = pc.greater(counts, 1)
    merged = pc.coalesce(*arrays)
    return merged, twice if pc.any(twice).as_py() else None
