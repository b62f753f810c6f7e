"""Attacks on a gateway with TLS and tokens in front of a token-protected Spark Connect.

Each test names the attack it tries; the table of attacks and outcomes is in
docs/security.md.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from pyspark.errors.exceptions.connect import AnalysisException, SparkConnectGrpcException
from pyspark.sql import SparkSession
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import ConfigError
from connect_plugin.server.gateway import Gateway, serve
from connect_plugin.server.statements.config_guard import PLAN_COMPRESSION_KEY
from tests.integration.security.conftest import (
    ALICE_SECOND_TOKEN,
    ALICE_TOKEN,
    BOB_TOKEN,
    SECRETS,
    UPSTREAM_TOKEN,
    Pki,
    Protected,
    gateway_config,
    write_tokens,
)
from tests.integration.support import temp_table_names

CONFIG = "/spark.connect.SparkConnectService/Config"


def client(gateway: Gateway, token: str, **params: str) -> SparkSession:
    extra = "".join(f";{key}={value}" for key, value in params.items())
    return SparkSession.builder.remote(f"{gateway.address};token={token}{extra}").create()


@pytest.fixture
def alice(secure_gateway: Gateway) -> Iterator[SparkSession]:
    session = client(secure_gateway, ALICE_TOKEN)
    try:
        yield session
    finally:
        session.stop()


def config_call(
    port: int,
    credentials: grpc.ChannelCredentials | None,
    metadata: tuple[tuple[str, str], ...] = (),
    session_id: str | None = None,
) -> spark_proto.ConfigResponse:
    """One Config RPC over a raw gRPC channel (the transport tests need their own credentials)."""
    target = f"127.0.0.1:{port}"
    channel = (
        grpc.insecure_channel(target)
        if credentials is None
        else grpc.secure_channel(target, credentials)
    )
    request = spark_proto.ConfigRequest(session_id=session_id or str(uuid.uuid4()))
    request.user_context.user_id = "mallory"
    request.operation.get_all.SetInParent()
    with channel:
        call = channel.unary_unary(
            CONFIG,
            request_serializer=spark_proto.ConfigRequest.SerializeToString,
            response_deserializer=spark_proto.ConfigResponse.FromString,
        )
        response: spark_proto.ConfigResponse = call(request, metadata=metadata, timeout=20)
        return response


def tls(pki: Pki, *, roots: Path | None = None, client_cert: bool = False) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=(roots or pki.ca.cert).read_bytes(),
        private_key=pki.client.key_pem if client_cert else None,
        certificate_chain=pki.client.cert_pem if client_cert else None,
    )


def test_a_token_over_tls_reaches_the_protected_spark(
    secure_gateway: Gateway, alice: SparkSession
) -> None:
    assert secure_gateway.address.endswith("/;use_ssl=true")
    assert alice.sql("SELECT 40 + 2 AS answer").collect()[0]["answer"] == 42


def test_plaintext_and_strangers_certificates_are_refused(secure_gateway: Gateway, pki: Pki) -> None:
    bearer = (("authorization", f"Bearer {ALICE_TOKEN}"),)
    with pytest.raises(grpc.RpcError) as plaintext:
        config_call(secure_gateway.port, None, bearer)
    assert plaintext.value.code() == grpc.StatusCode.UNAVAILABLE
    with pytest.raises(grpc.RpcError) as other_ca:
        config_call(secure_gateway.port, tls(pki, roots=pki.other_ca.cert), bearer)
    assert other_ca.value.code() == grpc.StatusCode.UNAVAILABLE
    assert config_call(secure_gateway.port, tls(pki), bearer).pairs


@pytest.mark.parametrize(
    "metadata",
    [
        (),
        (("authorization", "Bearer not-a-token-of-anyone-here"),),
        (("authorization", f"Basic {ALICE_TOKEN}"),),
        (("authorization", ALICE_TOKEN),),
    ],
    ids=["none", "unknown", "basic", "no-scheme"],
)
def test_calls_without_a_valid_token_are_unauthenticated_and_create_nothing(
    secure_gateway: Gateway, pki: Pki, metadata: tuple[tuple[str, str], ...]
) -> None:
    session_id = str(uuid.uuid4())
    before = secure_gateway.calls("Config")
    with pytest.raises(grpc.RpcError) as refused:
        config_call(secure_gateway.port, tls(pki), metadata, session_id)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert secure_gateway.calls("Config") == before + 1
    assert ALICE_TOKEN not in (refused.value.details() or "")
    assert secure_gateway.sessions is not None
    assert all(s.session_id != session_id for s in secure_gateway.sessions.sessions())
    assert not (secure_gateway.config.workspace / session_id).exists()


def test_client_certificates_are_required_when_a_client_ca_is_set(
    protected_upstream: Protected, pki: Pki, tokens_file: Path, tmp_path: Path
) -> None:
    config = gateway_config(
        protected_upstream, pki, tokens_file, tmp_path / "ws", tls_client_ca_file=pki.ca.cert
    )
    gateway = serve(config)
    try:
        bearer = (("authorization", f"Bearer {ALICE_TOKEN}"),)
        with pytest.raises(grpc.RpcError) as without:
            config_call(gateway.port, tls(pki), bearer)
        assert without.value.code() == grpc.StatusCode.UNAVAILABLE
        assert config_call(gateway.port, tls(pki, client_cert=True), bearer).pairs
    finally:
        gateway.stop()


def test_a_claimed_user_is_replaced_by_the_tokens_user(
    secure_gateway: Gateway, unique_name: str
) -> None:
    claims_bob = client(secure_gateway, ALICE_TOKEN, user_id="bob")
    try:
        claims_bob.sql(f"CREATE TEMPORARY TABLE {unique_name} AS SELECT 1 AS x")
        session_id = claims_bob.client._session_id
        assert secure_gateway.sessions is not None
        assert secure_gateway.sessions.find("alice", session_id) is not None
        assert secure_gateway.sessions.find("bob", session_id) is None
    finally:
        claims_bob.stop()


def test_another_user_naming_a_session_reaches_none_of_it(
    secure_gateway: Gateway, alice: SparkSession, unique_name: str
) -> None:
    alice.sql(f"CREATE TEMPORARY TABLE {unique_name} AS SELECT 'secret' AS s")
    alice.sql("SELECT 1 AS v").createOrReplaceTempView(f"{unique_name}_view")
    session_id = alice.client._session_id
    bob = client(secure_gateway, BOB_TOKEN, session_id=session_id)
    try:
        assert unique_name not in temp_table_names(bob)
        with pytest.raises(AnalysisException):
            bob.sql(f"SELECT * FROM {unique_name}").collect()
        with pytest.raises(AnalysisException):
            bob.sql(f"SELECT * FROM {unique_name}_view").collect()
        with pytest.raises(AnalysisException):
            bob.sql(f"DROP TEMPORARY TABLE {unique_name}").collect()
        bob.sql(f"CREATE TEMPORARY TABLE {unique_name} AS SELECT 'bob' AS s")
        assert bob.sql(f"SELECT s FROM {unique_name}").collect()[0]["s"] == "bob"
        bob.client.release_session()
    finally:
        bob.stop()
    assert alice.sql(f"SELECT s FROM {unique_name}").collect()[0]["s"] == "secret"
    assert secure_gateway.sessions is not None
    assert secure_gateway.sessions.find("bob", session_id) is None


def test_a_second_client_of_the_same_user_attaches_to_the_session(
    secure_gateway: Gateway, alice: SparkSession, unique_name: str
) -> None:
    alice.sql(f"CREATE TEMPORARY TABLE {unique_name} AS SELECT 7 AS x")
    second = client(secure_gateway, ALICE_SECOND_TOKEN, session_id=alice.client._session_id)
    try:
        assert second.sql(f"SELECT x FROM {unique_name}").collect()[0]["x"] == 7
    finally:
        second.stop()


def test_sighup_rotation_takes_new_tokens_and_keeps_old_ones_on_a_bad_file(
    protected_upstream: Protected, pki: Pki, tmp_path: Path
) -> None:
    tokens = write_tokens(tmp_path / "tokens", f"alice {ALICE_TOKEN}\n")
    gateway = serve(gateway_config(protected_upstream, pki, tokens, tmp_path / "ws"))
    rotated = "rotated-" + "r" * 24
    try:
        write_tokens(tokens, f"alice {rotated}\n")
        assert gateway.reload_tokens()
        assert config_call(gateway.port, tls(pki), (("authorization", f"Bearer {rotated}"),))
        with pytest.raises(grpc.RpcError) as removed:
            config_call(gateway.port, tls(pki), (("authorization", f"Bearer {ALICE_TOKEN}"),))
        assert removed.value.code() == grpc.StatusCode.UNAUTHENTICATED
        write_tokens(tokens, "alice short\n")
        assert not gateway.reload_tokens()
        assert config_call(gateway.port, tls(pki), (("authorization", f"Bearer {rotated}"),))
    finally:
        gateway.stop()


@pytest.mark.parametrize(
    ("upstream", "lines", "expected"),
    [
        ("{url}", "alice tooshort\n", "shorter than 16"),
        ("{url}", f"alice {ALICE_TOKEN}\nbob {ALICE_TOKEN}\n", "repeats the one on line 1"),
        ("{url};tokn=x", f"alice {ALICE_TOKEN}\n", "upstream parameter 'tokn' is unknown"),
    ],
    ids=["a short token", "a repeated token", "an unknown upstream parameter"],
)
def test_start_is_refused_for_bad_tokens_or_urls_without_quoting_a_token(
    protected_upstream: Protected,
    pki: Pki,
    tmp_path: Path,
    upstream: str,
    lines: str,
    expected: str,
) -> None:
    tokens = write_tokens(tmp_path / "tokens", lines)
    with pytest.raises(ConfigError) as refused:
        serve(
            gateway_config(
                protected_upstream,
                pki,
                tokens,
                tmp_path / "ws",
                upstream=upstream.format(url=protected_upstream.url),
            )
        )
    assert expected in str(refused.value)
    assert not any(secret in str(refused.value) for secret in SECRETS)


def test_the_gateway_without_the_upstream_token_is_refused_by_spark(
    protected_upstream: Protected, pki: Pki, tokens_file: Path, tmp_path: Path
) -> None:
    gateway = serve(
        gateway_config(
            protected_upstream, pki, tokens_file, tmp_path / "ws", upstream=protected_upstream.address
        )
    )
    try:
        session = client(gateway, ALICE_TOKEN)
        try:
            with pytest.raises(SparkConnectGrpcException):
                session.sql("SELECT 1").collect()
        finally:
            session.release_session_on_close = False
            session.stop()
    finally:
        gateway.stop()


def test_no_log_holds_a_token(
    protected_upstream: Protected,
    secure_gateway: Gateway,
    alice: SparkSession,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    alice.sql("SELECT 1").collect()
    with pytest.raises(grpc.RpcError):
        config_call(secure_gateway.port, None, (("authorization", f"Bearer {BOB_TOKEN}"),))
    logs = caplog.text + protected_upstream.log_path.read_text(errors="replace")
    assert logs
    assert not [secret for secret in SECRETS if secret in logs]
    assert UPSTREAM_TOKEN not in secure_gateway.address


def test_another_user_cloning_a_session_id_finds_no_session_to_clone(
    secure_gateway: Gateway, alice: SparkSession, unique_name: str
) -> None:
    alice.sql(f"CREATE TEMPORARY TABLE {unique_name} AS SELECT 'secret' AS s")
    bob = client(secure_gateway, BOB_TOKEN, session_id=alice.client._session_id)
    try:
        with pytest.raises(grpc.RpcError, match="SESSION_NOT_FOUND"):
            bob.cloneSession()
    finally:
        bob.stop()
    assert secure_gateway.sessions is not None
    assert secure_gateway.sessions.find("bob", alice.client._session_id) is None
    assert alice.sql(f"SELECT s FROM {unique_name}").collect()[0]["s"] == "secret"


def test_idle_expiry_and_restart_work_against_the_protected_spark(
    protected_upstream: Protected, pki: Pki, tokens_file: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    config = gateway_config(protected_upstream, pki, tokens_file, workspace)
    first = serve(config)
    try:
        kept = client(first, ALICE_TOKEN)
        kept.sql("CREATE TEMPORARY TABLE kept AS SELECT 1 AS x")
        session_id = kept.client._session_id
        kept.release_session_on_close = False
        kept.stop()
    finally:
        first.stop()
    restarted = serve(
        dataclasses.replace(
            config, session_idle_timeout_s=2.0, session_sweep_interval_s=0.5
        )
    )
    try:
        again = client(restarted, ALICE_SECOND_TOKEN, session_id=session_id)
        assert again.sql("SELECT x FROM kept").collect()[0]["x"] == 1
        assert restarted.sessions is not None
        deadline = time.monotonic() + 20
        while restarted.sessions.find("alice", session_id) is not None:
            assert time.monotonic() < deadline, "the idle session was never expired"
            time.sleep(0.25)
        assert not (workspace / session_id).exists()
        again.stop()
    finally:
        restarted.stop()


@pytest.mark.parametrize(
    "query",
    [
        "SELECT '${env:SPARK_CONNECT_AUTHENTICATE_TOKEN}' AS v",
        "SELECT '${system:user.name}' AS v",
        "SELECT '${spark.connect.authenticate.token}' AS v",
        "SELECT '${sparkconf:spark.hadoop.fs.s3a.secret.key}' AS v",
    ],
)
def test_substitutions_of_the_servers_secrets_are_refused(
    direct: SparkSession, alice: SparkSession, query: str
) -> None:
    """Spark replaces ``${...}`` in what it parses by settings, its environment and its system
    properties (straight to a Spark server, ``${env:HOME}`` is the server's home); the
    protected Spark behind this gateway holds its token in its environment."""
    home = direct.sql("SELECT '${env:HOME}' AS v").first()
    assert home is not None
    assert home.v == os.environ["HOME"]
    with pytest.raises(SparkConnectGrpcException) as refused:
        alice.sql(query).collect()
    assert refused.value.getCondition() == "CONNECT_PLUGIN.SETTING_PROTECTED"
    assert UPSTREAM_TOKEN not in str(refused.value)


def test_substitutions_hide_nowhere_in_a_request(alice: SparkSession) -> None:
    """An expression string, a filter and a setting's value (substituted when read) are refused
    alike; a substitution of a setting of the user's own still works."""
    for attempt in (
        lambda: alice.range(1).selectExpr("'${env:SPARK_CONNECT_AUTHENTICATE_TOKEN}' AS v").collect(),
        lambda: alice.range(1).where("'${env:HOME}' = ''").collect(),
        lambda: alice.conf.set("my.value", "${env:SPARK_CONNECT_AUTHENTICATE_TOKEN}"),
    ):
        with pytest.raises(SparkConnectGrpcException, match="SETTING_PROTECTED"):
            attempt()
    alice.conf.set("my.value", "41")
    assert alice.sql("SELECT ${my.value} + 1 AS v").first().v == 42  # type: ignore[union-attr]


def test_plans_are_never_compressed_past_the_gateway(alice: SparkSession) -> None:
    """A compressed plan would hide its statements and references from the gateway: clients
    are told compression is off, and a plan compressed anyway is refused."""
    assert alice.conf.get(PLAN_COMPRESSION_KEY) == "-1"
    alice.client._plan_compression_threshold = 0
    alice.client._plan_compression_algorithm = "ZSTD"
    padding = "x" * 4000
    with pytest.raises(AnalysisException, match=r"CONNECT_PLUGIN\.INVALID_PLAN.*compressed"):
        alice.sql(f"SELECT '{padding}' AS pad").collect()
