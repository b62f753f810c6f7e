"""Python accumulator updates kept from clients that cannot read them (the Scala client).

Since the session-based Python profiler (SPARK-46686) Spark Connect sends a
session's Python accumulator updates to every client, as observed metrics
named ``__python_accumulator__`` on the results of any query that ran
Python on the executors (a Python data source such as the scan, a Python
UDF). pyspark reads them; the Scala client cannot: its
``SparkResult.transformObservedMetrics`` fails an assertion on them, so its
``collect()`` of such a query fails. Only for the Scala client
(``clients.is_scala_client``), the gateway drops these metrics from
ExecutePlan and ReattachExecute responses; they carry nothing a Scala
program can use. Everything else in the response stays as Spark sent it.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError
from pyspark.sql.connect.proto import base_pb2

PYTHON_ACCUMULATOR_METRICS = "__python_accumulator__"
RESULT_METHODS = frozenset(("ExecutePlan", "ReattachExecute"))
"""The methods whose responses are ``ExecutePlanResponse`` messages."""
_MARK = PYTHON_ACCUMULATOR_METRICS.encode()


def without_python_accumulators(response: bytes) -> bytes:
    """``response`` without ``__python_accumulator__`` observed metrics (the same bytes when
    it has none)."""
    if _MARK not in response:
        return response
    try:
        decoded = base_pb2.ExecutePlanResponse.FromString(response)
    except DecodeError:
        return response
    kept = [m for m in decoded.observed_metrics if m.name != PYTHON_ACCUMULATOR_METRICS]
    if len(kept) == len(decoded.observed_metrics):
        return response
    del decoded.observed_metrics[:]
    decoded.observed_metrics.extend(kept)
    result: bytes = decoded.SerializeToString()
    return result
