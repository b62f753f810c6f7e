"""Files and checks shared by the file scan tests."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from connect_plugin.scanning import ScanReader, ScanSpec, plan_scan


def write_json(path: Path, records: Iterable[Mapping[str, Any] | str]) -> Path:
    """Newline-delimited json; a string record is written as it is (for malformed lines)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("".join(line + "\n" for line in lines))
    return path


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_parquet(path: Path, table: pa.Table) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def scan(paths: Any, file_format: str = "json", **options: Any) -> pa.Table:
    """Plan and read a scan in-process, checking every batch against the limits and schema."""
    spec = ScanSpec(paths if isinstance(paths, list) else [str(paths)], file_format, **options)
    return read(spec)


def read(spec: ScanSpec, reader: ScanReader | None = None) -> pa.Table:
    reader = reader or ScanReader(plan_scan(spec))
    batches = list(reader.read())
    for batch in batches:
        batch.validate(full=True)
        assert batch.schema == reader.schema
        assert batch.num_rows <= spec.max_rows
        assert batch.nbytes <= spec.max_bytes
    return pa.Table.from_batches(batches, schema=reader.schema)


def rows(table: pa.Table) -> list[dict[str, Any]]:
    return table.to_pylist()  # type: ignore[no-any-return]


def types(table: pa.Table | pa.Schema) -> dict[str, str]:
    schema = table.schema if isinstance(table, pa.Table) else table
    return {field.name: str(field.type) for field in schema}
