"""A protected stack: Spark Connect with a pre-shared token, a gateway serving TLS and tokens.

Spark Connect is started with ``SPARK_CONNECT_AUTHENTICATE_TOKEN``; the gateway
reaches it with ``;token=`` in its upstream URL, serves TLS with a certificate
of a test CA, and maps two users' tokens. pyspark clients trust the CA through
``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH``, which gRPC reads once per process: it is
set here, before any TLS channel of this test process exists.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from connect_plugin.config import Config
from connect_plugin.server.embedded import EmbeddedSparkConnect
from connect_plugin.server.gateway import Gateway, serve
from tests.integration.security.certs import Issued, issue, make_ca
from tests.integration.support import TEST_SPARK_CONF

UPSTREAM_TOKEN = "upstream-" + secrets.token_urlsafe(24)
ALICE_TOKEN = "alice-" + secrets.token_urlsafe(24)
ALICE_SECOND_TOKEN = "alice2-" + secrets.token_urlsafe(24)
BOB_TOKEN = "bob-" + secrets.token_urlsafe(24)
SECRETS = (UPSTREAM_TOKEN, ALICE_TOKEN, ALICE_SECOND_TOKEN, BOB_TOKEN)


@dataclass(frozen=True)
class Pki:
    ca: Issued
    server: Issued
    client: Issued
    other_ca: Issued
    other_client: Issued


@dataclass(frozen=True)
class Protected:
    address: str
    """The plain ``sc://host:port`` of the protected Spark Connect server."""
    log_path: Path

    @property
    def url(self) -> str:
        return f"{self.address}/;token={UPSTREAM_TOKEN}"


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    ca, ca_key = make_ca(folder, "test-ca")
    other_ca, other_key = make_ca(folder, "other-ca")
    pki = Pki(
        ca=ca,
        server=issue(folder, "gateway", ca, ca_key, server=True),
        client=issue(folder, "client", ca, ca_key, server=False),
        other_ca=other_ca,
        other_client=issue(folder, "other-client", other_ca, other_key, server=False),
    )
    os.environ["GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"] = str(ca.cert)
    return pki


@pytest.fixture(scope="session")
def protected_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Protected]:
    spark_dir = tmp_path_factory.mktemp("protected-spark")
    conf = {**TEST_SPARK_CONF, "spark.sql.warehouse.dir": str(spark_dir / "warehouse")}
    log_path = spark_dir / "spark-connect.log"
    server = EmbeddedSparkConnect(conf_dir=None, extra_conf=conf, log_path=log_path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPARK_CONNECT_AUTHENTICATE_TOKEN", UPSTREAM_TOKEN)
        server.start()
    try:
        yield Protected(server.address, log_path)
    finally:
        server.stop()


def write_tokens(path: Path, lines: str) -> Path:
    path.write_text(lines)
    path.chmod(0o600)
    return path


@pytest.fixture(scope="session")
def tokens_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tokens")
    return write_tokens(
        folder / "tokens",
        f"# users of the test gateway\nalice {ALICE_TOKEN}\nalice {ALICE_SECOND_TOKEN}\n"
        f"bob {BOB_TOKEN}\n",
    )


def gateway_config(
    protected: Protected, pki: Pki, tokens: Path, workspace: Path, **overrides: object
) -> Config:
    settings: dict[str, object] = dict(
        port=0,
        upstream=protected.url,
        workspace=workspace,
        conf_dir=None,
        tls_cert_file=pki.server.cert,
        tls_key_file=pki.server.key,
        auth_tokens_file=tokens,
    )
    settings.update(overrides)
    return Config(**settings)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def secure_gateway(
    protected_upstream: Protected,
    pki: Pki,
    tokens_file: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Gateway]:
    config = gateway_config(
        protected_upstream, pki, tokens_file, tmp_path_factory.mktemp("secure-workspace")
    )
    running = serve(config)
    try:
        yield running
    finally:
        running.stop()
