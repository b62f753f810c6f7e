"""The schema a scan was first planned with, kept in a file, so that later plans of it keep it.

A DataFrame of ``scan()`` is planned again whenever Spark analyses a read of
it anew: a query the gateway rewrote (a filter that prunes files, a count)
is a new read. Planned from the files there are then, it could give other
columns than the DataFrame's (a file deleted, one added with new keys). So
the first plan of a scan writes what decides its columns (the table schema
and what the files' folders offer) to a file the gateway names for it
(``kept_plan``), and every later plan of the same scan reads that file and
only lists the files again: the columns stay those of the first plan, the
rows come from the files there are now, as ``ScanPlan.relisted`` reads them.

The file is written whole under a temporary name and linked into place, so
a reader sees all of it or nothing, and two first plans at once agree on
the one that was linked first. A file that cannot be written or read
leaves the plan as it was made (the scan keeps working, its columns
derived anew, as without a kept plan); a file made for another spec is
never used.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import uuid
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from connect_plugin.scanning.files.files import list_files
from connect_plugin.scanning.planning.plan import ScanPlan, plan_scan
from connect_plugin.scanning.planning.projection import Partitions, resolve_projection
from connect_plugin.scanning.planning.schema_tracker import TableSchema
from connect_plugin.scanning.request.spec import ScanSpec

log = logging.getLogger(__name__)

VERSION = 1
"""The layout of a kept plan's file; a file of another layout is not used."""


def kept_plan(spec: ScanSpec, path: str) -> ScanPlan:
    """The plan of ``spec`` with the columns kept at ``path``; planned and kept there if none is."""
    kept = _read(spec, path)
    if kept is not None:
        return kept
    plan = plan_scan(spec)
    text = planned_text(plan)
    if _write(path, text):
        return plan
    return _read(spec, path) or plan


def planned_text(plan: ScanPlan) -> str:
    """What decides a plan's columns, as JSON: its table schema and partitions."""
    table = plan.table
    hive = plan.partitions.hive
    data = {
        "version": VERSION,
        "spec": plan.spec.scan_id,
        "fields": _schema_text(table.fields),
        "implicit": dict(table.implicit),
        "provided": sorted(table.provided),
        "conflicts": dict(table.conflicts),
        "depth": plan.partitions.depth,
        "hive_keys": list(hive),
        "hive": _schema_text([pa.field(name, kind) for name, kind in hive.values()]),
    }
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def replanned(spec: ScanSpec, text: str) -> ScanPlan | None:
    """The plan of ``spec`` over the files there are now, with the columns ``text`` keeps;
    None when ``text`` was kept for another spec or in another layout."""
    data: dict[str, Any] = json.loads(text)
    if data.get("version") != VERSION or data.get("spec") != spec.scan_id:
        return None
    table = TableSchema(
        _fields(data["fields"]),
        dict(data["implicit"]),
        frozenset(data["provided"]),
        dict(data["conflicts"]),
    )
    hive_fields = _fields(data["hive"])
    hive = {
        key: (found.name, found.type)
        for key, found in zip(data["hive_keys"], hive_fields, strict=True)
    }
    partitions = Partitions(int(data["depth"]), hive)
    files = tuple(list_files(spec.paths, spec.storage))
    columns = resolve_projection(spec, table, partitions)
    return ScanPlan(spec, files, table, columns, partitions, from_cache=True)


def _schema_text(fields: Sequence[pa.Field]) -> str:
    serialized = pa.schema(fields).serialize().to_pybytes()
    return base64.b64encode(serialized).decode("ascii")


def _fields(text: str) -> tuple[pa.Field, ...]:
    schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))
    return tuple(schema)


def _read(spec: ScanSpec, path: str) -> ScanPlan | None:
    try:
        with open(path, encoding="utf-8") as kept:
            text = kept.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("the kept plan %s of a scan cannot be read (%s); planning it anew", path, exc)
        return None
    try:
        return replanned(spec, text)
    except (ValueError, KeyError, TypeError, pa.ArrowException) as exc:
        log.warning("the kept plan %s of a scan is not readable (%s); planning it anew", path, exc)
        return None


def _write(path: str, text: str) -> bool:
    """Keep ``text`` at ``path`` unless a plan is there already; whether this one was kept."""
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temporary, "x", encoding="utf-8") as written:
            os.chmod(temporary, 0o600)
            written.write(text)
        os.link(temporary, path)
    except FileExistsError:
        return False
    except OSError as exc:
        log.warning(
            "the plan of a scan cannot be kept at %s (%s): a later plan of it derives its "
            "columns from the files anew",
            path,
            exc,
        )
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
    return True
