"""An S3-compatible server on a loopback port for the object-store tests: moto's server mode.

Started once per test session (``object_store`` in ``tests/conftest.py``);
each test writes into a bucket of its own, so tests never see each other's
objects.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow.fs as pafs

REGION = "us-east-1"


@dataclass(frozen=True)
class ObjectStore:
    endpoint: str
    access_key: str
    secret_key: str

    @property
    def options(self) -> dict[str, str]:
        """The scan options that reach this store."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.region": REGION,
            "s3.access_key": self.access_key,
            "s3.secret_key": self.secret_key,
        }

    def filesystem(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            endpoint_override=self.endpoint,
            region=REGION,
            scheme="http",
            allow_bucket_creation=True,
        )

    def new_bucket(self) -> str:
        name = f"bucket-{uuid.uuid4().hex[:12]}"
        self.filesystem().create_dir(name)
        return name

    def put(self, key: str, data: bytes) -> str:
        """Write ``bucket/key``; returns its ``s3://`` URL."""
        with self.filesystem().open_output_stream(key, compression=None) as out:
            out.write(data)
        return f"s3://{key}"


@contextmanager
def running_object_store() -> Iterator[ObjectStore]:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield ObjectStore(
            endpoint=f"http://127.0.0.1:{port}",
            access_key=f"test-{uuid.uuid4().hex[:8]}",
            secret_key=f"secret-{uuid.uuid4().hex}",
        )
    finally:
        server.stop()
