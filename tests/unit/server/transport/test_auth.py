"""Tokens file, bearer check and the upstream URL's secrets."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from connect_plugin.config import Config
from connect_plugin.errors import ConfigError, Unauthenticated
from connect_plugin.server.transport.auth import TokenAuthenticator
from connect_plugin.server.transport.service import forwardable_metadata
from connect_plugin.upstream_url import parse_upstream, redact

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdefgh"


def tokens_file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "tokens"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_tokens_map_to_their_users(tmp_path: Path) -> None:
    path = tokens_file(tmp_path, f"# users\nalice {ALICE}\n\nbob {BOB}  # second\n")
    auth = TokenAuthenticator(path)
    assert auth.authenticate([("authorization", f"Bearer {ALICE}")]) == "alice"
    assert auth.authenticate([("authorization", f"bearer {BOB}")]) == "bob"
    assert auth.users == {"alice", "bob"}


@pytest.mark.parametrize(
    "metadata",
    [
        [],
        [("authorization", "Bearer not-a-known-token-at-all")],
        [("authorization", f"Basic {ALICE}")],
        [("authorization", ALICE)],
        [("authorization", f"Bearer {ALICE}"), ("authorization", f"Bearer {BOB}")],
        [("x-authorization", f"Bearer {ALICE}")],
    ],
)
def test_calls_without_a_known_bearer_token_are_unauthenticated(
    tmp_path: Path, metadata: list[tuple[str, str]]
) -> None:
    auth = TokenAuthenticator(tokens_file(tmp_path, f"alice {ALICE}\nbob {BOB}\n"))
    with pytest.raises(Unauthenticated) as error:
        auth.authenticate(metadata)
    assert ALICE not in str(error.value)
    assert BOB not in str(error.value)


@pytest.mark.parametrize(
    ("text", "mode", "expected"),
    [
        (f"alice {ALICE}\n", 0o640, "open to group or others"),
        (f"alice {ALICE}\n", 0o604, "open to group or others"),
        ("alice short-token\n", 0o600, "line 1: the token of user 'alice' is shorter than 16"),
        (f"alice {ALICE}\nbob {ALICE}\n", 0o600, "line 2: the token of user 'bob' repeats"),
        ("# nobody\n\n", 0o600, "holds no 'user_id token [group]' line"),
        (
            f"alice {ALICE} team extra\n",
            0o600,
            "line 1: expected 'user_id token [group]', found 4 fields",
        ),
        (
            f"alice {ALICE} team\nalice {BOB}\n",
            0o600,
            "line 2: user 'alice' is in group '(none)' here and in 'team'",
        ),
    ],
)
def test_bad_tokens_files_are_refused_without_quoting_a_token(
    tmp_path: Path, text: str, mode: int, expected: str
) -> None:
    path = tokens_file(tmp_path, text, mode)
    with pytest.raises(ConfigError) as error:
        TokenAuthenticator(path)
    message = str(error.value)
    assert expected in message
    assert str(path) in message
    assert ALICE not in message
    assert "short-token" not in message


def test_the_optional_group_column_puts_users_in_groups(tmp_path: Path) -> None:
    path = tokens_file(tmp_path, f"alice {ALICE} analysts\nbob {BOB}\n")
    auth = TokenAuthenticator(path)
    assert auth.authenticate([("authorization", f"Bearer {ALICE}")]) == "alice"
    assert auth.group_of("alice") == "analysts"
    assert auth.group_of("bob") is None
    assert auth.group_of("carol") is None


def test_a_missing_tokens_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read the tokens file .*absent"):
        TokenAuthenticator(tmp_path / "absent")


def test_reload_swaps_tokens_and_keeps_the_old_ones_when_the_new_file_is_bad(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tokens_file(tmp_path, f"alice {ALICE}\n")
    auth = TokenAuthenticator(path)
    path.write_text(f"bob {BOB}\n")
    assert auth.reload()
    assert auth.authenticate([("authorization", f"Bearer {BOB}")]) == "bob"
    with pytest.raises(Unauthenticated):
        auth.authenticate([("authorization", f"Bearer {ALICE}")])
    path.write_text(f"alice {ALICE}\nbob tiny\n")
    with caplog.at_level(logging.ERROR):
        assert not auth.reload()
    assert "kept the previous tokens" in caplog.text
    assert "tiny" not in caplog.text
    assert auth.authenticate([("authorization", f"Bearer {BOB}")]) == "bob"


def test_the_clients_authorization_is_never_forwarded() -> None:
    metadata = [("authorization", f"Bearer {ALICE}"), ("x-trace", "1")]
    assert forwardable_metadata(metadata) == (("x-trace", "1"),)


def test_upstream_urls_parse_as_spark_connect_does() -> None:
    url = parse_upstream(f"sc://spark.example:443/;use_ssl=true;token={ALICE};user_id=gw")
    assert (url.target, url.use_ssl, url.token, url.param("user_id")) == (
        "spark.example:443",
        True,
        ALICE,
        "gw",
    )
    assert url.redacted == "sc://spark.example:443/;use_ssl=true;token=<redacted>;user_id=gw"
    assert parse_upstream("sc://spark").target == "spark:15002"
    assert parse_upstream(f"sc://localhost:1/;token={ALICE}").secure


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"sc://spark:1/;tokn={ALICE}", "upstream parameter 'tokn' is unknown"),
        ("sc://spark:1/;token=", "'token' is empty"),
        ("sc://spark:1/;use_ssl", "'use_ssl' has no value"),
        (f"http://spark:1/;token={ALICE}", "must be a Spark Connect URL"),
        (f"sc://spark:x/;token={ALICE}", "the port is not a number"),
    ],
)
def test_bad_upstream_urls_are_start_up_errors_without_the_token(url: str, expected: str) -> None:
    with pytest.raises(ConfigError) as error:
        Config(upstream=url)
    assert expected in str(error.value)
    assert ALICE not in str(error.value)


def test_the_config_and_redacted_urls_never_show_the_token() -> None:
    url = f"sc://spark:1/;token={ALICE}"
    assert ALICE not in repr(Config(upstream=url))
    assert ALICE not in redact(url)
    assert ALICE not in redact(f"sc://spark:1/;bad={ALICE}")


def test_tls_needs_cert_and_key_together() -> None:
    with pytest.raises(ConfigError, match="needs both tls_cert_file and tls_key_file"):
        Config(tls_cert_file=Path("cert.pem"))
    with pytest.raises(ConfigError, match="tls_client_ca_file needs TLS"):
        Config(tls_client_ca_file=Path("ca.pem"))
