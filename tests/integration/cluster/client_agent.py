"""A stock pyspark client on a host of its own, driven by a test through stdin and stdout.

The test process cannot join the client's network namespace for its gRPC
calls (gRPC makes its sockets on threads of its own), so the client runs here,
started with ``ip netns exec``: one JSON request per line in, one JSON answer
per line out, in order. Sessions are named by the test and live as long as
this process, across restarts of the gateway.

Requests (``session`` names a session opened by ``open``):

- ``{"op": "open", "session": s}`` -> ``{"session_id": ...}``
- ``{"op": "sql", "session": s, "query": q}`` -> ``{"rows": [[...], ...]}``
- ``{"op": "scan", "session": s, "paths": p, "options": {...}, "select": [exprs]}``
  -> ``{"rows": ...}``: ``connect_plugin.scan(spark, p, **options).selectExpr(*exprs)``
- ``{"op": "stop", "session": s}`` -> ``{}``: ``spark.stop()``, which releases the session

A failure answers ``{"error": <exception class>, "message": ...}``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pyspark.sql import SparkSession

import connect_plugin


def _rows(frame: Any) -> list[list[Any]]:
    return [list(row) for row in frame.collect()]


class Agent:
    def __init__(self, address: str) -> None:
        self.address = address
        self.sessions: dict[str, SparkSession] = {}

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request["op"]
        name = request["session"]
        if op == "open":
            spark = SparkSession.builder.remote(self.address).create()
            self.sessions[name] = spark
            return {"session_id": spark.client._session_id}
        spark = self.sessions[name]
        if op == "sql":
            return {"rows": _rows(spark.sql(request["query"]))}
        if op == "scan":
            frame = connect_plugin.scan(spark, request["paths"], **request.get("options", {}))
            return {"rows": _rows(frame.selectExpr(*request["select"]))}
        if op == "stop":
            spark.stop()
            del self.sessions[name]
            return {}
        raise ValueError(f"unknown op {op!r}")


def main() -> int:
    agent = Agent(sys.argv[1])
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = agent.handle(request)
        except Exception as exc:
            answer = {"error": type(exc).__name__, "message": str(exc)}
        print(json.dumps(answer, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
