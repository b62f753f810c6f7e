"""The scan's choices as enums, and the words users write for them.

Strings exist only at the edges (the client's keyword arguments, the proto,
the text of a SQL ``OPTIONS (...)`` clause); each edge hands its text to
``choice``, ``boolean`` or ``whole_number``, whose errors name the option
and what it takes. Inside the scan core only the enum members travel.

The enums mix in ``str`` so that a member serialises as its value in the
JSON form of a spec and prints as that value in messages. This module
imports nothing of the scan, so every floor of it may use the enums.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import TypeVar

from connect_plugin.errors import InvalidScanSpec


class ScanChoice(str, Enum):
    """An enum whose members are the lower-case words users write."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @classmethod
    def words(cls) -> str:
        return ", ".join(member.value for member in cls)

    @classmethod
    def either(cls) -> str:
        """The words as a sentence offers them: ``json, csv or text``."""
        *most, last = (member.value for member in cls)
        return f"{', '.join(most)} or {last}" if most else last


class OnError(ScanChoice):
    """What a record that cannot be read under the schema does to the scan."""

    FAIL = "fail"
    SKIP = "skip"
    NULL = "null"
    REJECT = "reject"
    """Skip the record and keep it in the rejects table (DuckDB's store_rejects)."""


class Partitioning(ScanChoice):
    """How directories below a scan root become columns."""

    DIRS = "dirs"
    HIVE = "hive"


class Evolution(ScanChoice):
    """What columns that are not in the schema do (Auto Loader's schemaEvolutionMode)."""

    ADD_NEW_COLUMNS = "add_new_columns"
    FAIL_ON_NEW_COLUMNS = "fail_on_new_columns"
    RESCUE = "rescue"
    NONE = "none"

    @property
    def fixes_schema(self) -> bool:
        """Whether the provided schema, or else the first file, fixes the set of columns."""
        return self is not Evolution.ADD_NEW_COLUMNS


class MissingColumns(ScanChoice):
    """What a projected column that no file has and the schema does not name gives."""

    NULL = "null"
    """A string column of nulls, as in Drill."""
    ERROR = "error"
    """An error naming the column and the columns there are (Polars' ``missing_columns='raise'``)."""


class Compression(ScanChoice):
    """How the bytes of json, csv, tsv and text files are compressed."""

    AUTO = "auto"
    NONE = "none"
    GZIP = "gzip"
    BZIP2 = "bzip2"
    ZSTD = "zstd"


_ALIASES: Mapping[type[ScanChoice], Mapping[str, str]] = {
    MissingColumns: {"raise": "error", "insert": "null"},
    Compression: {"gz": "gzip", "bz2": "bzip2", "zst": "zstd", "uncompressed": "none"},
    Evolution: {
        "addnewcolumns": "add_new_columns",
        "failonnewcolumns": "fail_on_new_columns",
    },
}

Choice = TypeVar("Choice", bound=ScanChoice)


def choice(option: str, value: object, kind: type[Choice]) -> Choice:
    """``value`` (a member, or its word in any case) as a member of ``kind``."""
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        word = _ALIASES.get(kind, {}).get(word.replace("_", ""), word)
        for member in kind:
            if member.value == word:
                return member
    raise InvalidScanSpec(f"{option} must be one of {kind.words()}; got {value!r}")


def boolean(option: str, value: object) -> bool:
    """``true``/``false`` text (any case) or a bool."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise InvalidScanSpec(f"{option} must be true or false, got {value!r}")


def whole_number(option: str, value: object) -> int:
    """A whole number, or its decimal text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise InvalidScanSpec(f"{option} must be a whole number, got {value!r}")
