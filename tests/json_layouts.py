"""The same json records written in each layout, for the unit and the integration scan tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

RECORDS = [
    {"id": 1, "name": "a", "items": [{"sku": "x", "n": 1}, {"sku": "y", "n": 2}]},
    {"id": 2, "name": "b", "items": []},
    {"id": 3, "name": "c", "items": [{"sku": "z", "n": 3}]},
]
"""Records with an array of objects inside, which is a list column, never records."""


def as_lines(records: Sequence[Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def as_array(records: Sequence[Any], indent: int | None = None) -> str:
    return json.dumps(list(records), indent=indent)


def as_documents(records: Sequence[Any], indent: int | None = 2, separator: str = "\n") -> str:
    return separator.join(json.dumps(r, indent=indent) for r in records)


WRITERS: dict[str, Callable[[Sequence[Any]], str]] = {
    "lines": as_lines,
    "array": as_array,
    "array, pretty": lambda records: as_array(records, indent=2),
    "array, one per line": lambda records: "[\n" + ",\n".join(map(json.dumps, records)) + "\n]\n",
    "documents, pretty": as_documents,
    "documents, on one line": lambda records: as_documents(records, None, ""),
}
