"""Shared pieces of the integration tests (fixtures live in conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession

# Small enough that any result of a few MB is split over several streams,
# so every test run also exercises ReattachExecute through the gateway.
SENDER_MAX_STREAM_SIZE = 1024 * 1024
TEST_SPARK_CONF = {
    "spark.connect.execute.reattachable.senderMaxStreamSize": str(SENDER_MAX_STREAM_SIZE),
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
}


@dataclass(frozen=True)
class Upstream:
    address: str
    embedded: bool


def new_session(address: str) -> SparkSession:
    """A fresh Spark Connect session (never the process-wide default one)."""
    return SparkSession.builder.remote(address).create()
