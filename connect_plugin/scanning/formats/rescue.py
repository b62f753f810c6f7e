"""The rescued-data column: what did not fit the schema, kept as JSON instead of lost.

As in Databricks Auto Loader's ``_rescued_data``, a record's rescued values
form one JSON object per row: each field the table does not keep (a column
outside a strict or provided schema, or one that turned up past the
sample), and each value that does not fit its column's type, under the
name the file gives it, plus ``_file_path``, the file's URL. A row with
nothing to rescue has null there. The readers build it only when the scan
names a rescued column, so a scan without one pays nothing.

With ``evolution="fail_on_new_columns"`` the same fields outside the table
are an error instead, whose text ``new_columns_message`` writes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

FILE_KEY = "_file_path"
"""The key naming the file in every rescued object, as Auto Loader names it."""


def rescued_text(values: Mapping[str, Any], url: str) -> str:
    """One row's rescued object; values that are not JSON types are written as text."""
    return json.dumps(
        {**values, FILE_KEY: url}, default=str, ensure_ascii=False, separators=(",", ":")
    )


def rescued_array(extras: Sequence[tuple[str, pa.Array]], length: int, url: str) -> pa.Array:
    """Per row, the non-null values of the ``extras`` columns as a rescued object, else null."""
    present = [(name, array) for name, array in extras if array.null_count < len(array)]
    if not present:
        return pa.nulls(length, pa.string())
    values = [(name, array.to_pylist()) for name, array in present]
    texts = []
    for row in range(length):
        found = {name: column[row] for name, column in values if column[row] is not None}
        texts.append(rescued_text(found, url) if found else None)
    return pa.array(texts, pa.string())


def without_file(text: str | None) -> dict[str, Any]:
    """The fields of a rescued object (None: no object yet), without its file key."""
    if text is None:
        return {}
    values: dict[str, Any] = json.loads(text)
    values.pop(FILE_KEY, None)
    return values


def new_columns_message(where: str, names: Sequence[str], fixed_by: str) -> str:
    listed = ", ".join(f"'{name}'" for name in names)
    return (
        f"file {where} has new column(s) {listed} that the schema fixed by {fixed_by} lacks "
        "(evolution='fail_on_new_columns'); scan with evolution='add_new_columns' to take "
        "them, 'rescue' to keep their values in the rescued-data column, or 'none' to "
        "ignore them"
    )
