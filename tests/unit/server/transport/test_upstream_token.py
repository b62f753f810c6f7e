"""The upstream token file: read like the client tokens file, swapped by ``reload``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from connect_plugin.config import Config
from connect_plugin.errors import ConfigError
from connect_plugin.server.transport.channels import TokenChannel
from connect_plugin.server.transport.upstream_token import UpstreamToken, read_upstream_token

TOKEN = "spark-token-0123456789abcdef"


def _file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "spark-token"
    path.write_text(text)
    os.chmod(path, mode)
    return path


class _Recording:
    """A channel's stand-in that keeps the metadata each call was made with."""

    def __init__(self) -> None:
        self.sent: list[tuple[tuple[str, str], ...]] = []

    def unary_unary(self, method: str) -> Callable[..., None]:
        def call(request: object, *, metadata: tuple[tuple[str, str], ...], timeout: float) -> None:
            self.sent.append(metadata)

        return call


def _sent(token: Callable[[], str], metadata: tuple[tuple[str, str], ...] = ()) -> tuple[tuple[str, str], ...]:
    recording = _Recording()
    TokenChannel(recording, token).unary_unary("/spark/Config")(None, metadata=metadata, timeout=1.0)
    return recording.sent[0]


def test_the_one_line_is_the_token(tmp_path: Path) -> None:
    assert read_upstream_token(_file(tmp_path, f"\n  {TOKEN}  \n\n")) == TOKEN


@pytest.mark.parametrize(
    ("text", "mode", "problem"),
    [
        (TOKEN, 0o644, "open to group or others"),
        ("", 0o600, "found 0 non-empty lines"),
        (f"{TOKEN}\n{TOKEN}\n", 0o600, "found 2 non-empty lines"),
        (f"user {TOKEN}\n", 0o600, "token alone, on one line"),
    ],
)
def test_a_bad_file_is_named_and_its_content_never(
    tmp_path: Path, text: str, mode: int, problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem) as refused:
        read_upstream_token(_file(tmp_path, text, mode))
    assert str(tmp_path / "spark-token") in str(refused.value)
    assert TOKEN not in str(refused.value)


def test_reload_swaps_the_token_or_keeps_it(tmp_path: Path) -> None:
    path = _file(tmp_path, TOKEN)
    plugin = UpstreamToken(path)
    assert _sent(plugin) == (("authorization", f"Bearer {TOKEN}"),)
    assert _sent(plugin, (("x-client", "a"),)) == (
        ("x-client", "a"),
        ("authorization", f"Bearer {TOKEN}"),
    )
    _file(tmp_path, "rotated-token-0123456789")
    assert plugin.reload()
    assert _sent(plugin) == (("authorization", "Bearer rotated-token-0123456789"),)
    _file(tmp_path, "rotated-token-0123456789", mode=0o640)
    assert not plugin.reload()
    assert _sent(plugin) == (("authorization", "Bearer rotated-token-0123456789"),)


def test_the_token_is_given_once_and_not_to_an_embedded_server(tmp_path: Path) -> None:
    path = _file(tmp_path, TOKEN)
    with pytest.raises(ConfigError, match="either token= in upstream or upstream_token_file"):
        Config(upstream="sc://127.0.0.1:15002/;token=abcdefghijklmnopq", upstream_token_file=path)
    with pytest.raises(ConfigError, match="with local the embedded server gets a token"):
        Config(local=True, upstream_token_file=path)
    assert Config(upstream="sc://127.0.0.1:15002", upstream_token_file=path).upstream_token_file == path
