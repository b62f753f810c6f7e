"""Scans inside plans a client cached keep their whole read, so that Spark finds its cache.

The gateway rewrites a scan for the query around it: a filter above it
becomes a file filter (``scan_pruning``), a count above it per-file counts
(``scan_counts``). Spark's cache matches plans, so once a client persisted
a DataFrame (``df.cache()``: AnalyzePlan ``persist``), a rewritten scan
under a later ``df.where(...)`` or ``df.count()`` would no longer match the
cached plan and would read the files again. A session therefore counts the
scans that a plan it persisted holds unrewritten (``df.cache()`` of a scan,
or of a selection of its columns), by their message, and the rewrites leave
those scans as they are until every plan holding them is unpersisted (or
``spark.catalog.clearCache()`` runs). A persisted plan whose scan was
rewritten (a filtered scan, pruned) is not counted: the same query is
rewritten the same way later, and finds the cache as it is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterator

from google.protobuf.message import Message
from pyspark.sql.connect import proto as spark_proto

from connect_plugin import proto
from connect_plugin.server.transport.plans import plan_nodes, type_name_of, unpack

_SCAN_TYPE = proto.Scan.DESCRIPTOR.full_name

CachedScans = Collection[bytes]
"""The keys (``scan_key``) of a session's scans that rewrites leave whole."""


def scan_key(scan: proto.Scan) -> bytes:
    """What identifies a scan's read, whatever a rewrite added to it."""
    plain = proto.Scan()
    plain.CopyFrom(scan)
    plain.ClearField("file_filter")
    plain.ClearField("count_rows")
    return plain.SerializeToString(deterministic=True)


def scans_in(tree: Message) -> Iterator[proto.Scan]:
    """Every scan message in a plan tree."""
    for node in plan_nodes(tree, spark_proto.Relation):
        assert isinstance(node, spark_proto.Relation)
        if node.HasField("extension") and type_name_of(node.extension) == _SCAN_TYPE:
            message = unpack(node.extension, proto.Scan)
            if message is not None:
                yield message


def is_cached(scan: proto.Scan, cached: CachedScans) -> bool:
    return bool(cached) and scan_key(scan) in cached


def unrewritten(request: spark_proto.AnalyzePlanRequest) -> list[bytes]:
    """The keys of the scans a persist or unpersist request's plan holds as they were sent,
    once the rewrites ran on it."""
    kind = request.WhichOneof("analyze")
    if kind not in ("persist", "unpersist"):
        return []
    relation = request.persist.relation if kind == "persist" else request.unpersist.relation
    return [
        scan_key(s) for s in scans_in(relation) if not s.file_filter and not s.count_rows
    ]


def track(
    request: spark_proto.AnalyzePlanRequest, keys: list[bytes], cached: Counter[bytes]
) -> None:
    """Count the scans a persisted plan holds whole; uncount those of an unpersisted one."""
    if request.WhichOneof("analyze") == "persist":
        cached.update(keys)
        return
    cached.subtract(keys)
    for key in [key for key, count in cached.items() if count <= 0]:
        del cached[key]


def clears_cache(plan: spark_proto.Plan) -> bool:
    """Whether the plan is ``spark.catalog.clearCache()``."""
    root = plan.root
    return root.HasField("catalog") and root.catalog.HasField("clear_cache")
