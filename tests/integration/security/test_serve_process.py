"""``connect-plugin serve`` as a process: tokens rotated by a real SIGHUP, and its log holds no secret."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import grpc

from connect_plugin.server.embedded import free_port
from tests.integration.security.conftest import (
    ALICE_TOKEN,
    SECRETS,
    UPSTREAM_TOKEN,
    Pki,
    Protected,
    write_tokens,
)
from tests.integration.security.test_security import config_call, tls
from tests.integration.test_cli import _read_stdout_line, _running

ROTATED = "rotated-by-sighup-" + "q" * 20
TOO_SHORT = "tiny-secret"
ROTATION_TIMEOUT_S = 20.0


def _answers(port: int, pki: Pki, token: str) -> bool:
    try:
        config_call(port, tls(pki), (("authorization", f"Bearer {token}"),))
    except grpc.RpcError as refused:
        code = refused.code()  # type: ignore[attr-defined]
        if code != grpc.StatusCode.UNAUTHENTICATED:
            raise
        return False
    return True


def _until(condition: bool, port: int, pki: Pki, token: str) -> None:
    deadline = time.monotonic() + ROTATION_TIMEOUT_S
    while _answers(port, pki, token) != condition:
        assert time.monotonic() < deadline, f"token still {'refused' if condition else 'taken'}"
        time.sleep(0.2)


def test_sighup_rotates_the_tokens_of_a_serving_process_whose_log_holds_no_secret(
    protected_upstream: Protected, pki: Pki, tmp_path: Path
) -> None:
    tokens = write_tokens(tmp_path / "tokens", f"alice {ALICE_TOKEN}\n")
    port = free_port()
    args = [
        "serve", "--upstream", protected_upstream.url, "--port", str(port),
        "--workspace", str(tmp_path / "ws"), "--log-level", "DEBUG",
        "--tls-cert", str(pki.server.cert), "--tls-key", str(pki.server.key),
        "--auth-tokens", str(tokens),
    ]  # fmt: skip
    with _running(args, tmp_path) as process:
        ready = _read_stdout_line(process, 120)
        assert ready.endswith(f":{port}/;use_ssl=true"), ready
        assert _answers(port, pki, ALICE_TOKEN)
        write_tokens(tokens, f"alice {ROTATED}\n")
        process.send_signal(signal.SIGHUP)
        _until(True, port, pki, ROTATED)
        assert not _answers(port, pki, ALICE_TOKEN)
        write_tokens(tokens, f"alice {TOO_SHORT}\n")
        process.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        assert process.poll() is None
        assert _answers(port, pki, ROTATED)
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
    log = (tmp_path / "stderr.log").read_text()
    assert "token=<redacted>" in log
    assert "kept the previous tokens" in log
    leaked = [s for s in (*SECRETS, ROTATED, TOO_SHORT) if s in log]
    assert not leaked, "the gateway's log holds a token"
    assert UPSTREAM_TOKEN not in ready

