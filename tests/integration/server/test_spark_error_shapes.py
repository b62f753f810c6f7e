"""The errors the fake upstream of the unit tests sends are the ones this Spark sends.

The unit tests decide liveness against ``tests/unit/server/spark_errors.json``;
here the same errors are provoked on the real Spark Connect server and must
have the recorded shape (code, message, ErrorInfo reason, domain and
metadata), or the recording is stale and must be refreshed.
"""

from __future__ import annotations

from tests.integration.support import Upstream
from tests.unit.server.spark_errors import load, record


def test_spark_sends_the_recorded_error_shapes(upstream: Upstream) -> None:
    assert record(upstream.address) == load()
