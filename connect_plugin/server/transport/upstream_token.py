"""Spark Connect's token, from a file the gateway re-reads on SIGHUP.

With ``upstream_token_file`` the token the gateway sends to Spark
(``authorization: Bearer``) is the one line of a private file rather than
the ``token=`` of the upstream URL. Every upstream call asks for the current
token when it starts, so after ``reload`` (SIGHUP, with the client tokens
file) new calls carry the new token while calls in flight finish with the
one they started with: rotating Spark's token is restarting Spark with the
new one and sending the gateway SIGHUP, without restarting the gateway.
"""

from __future__ import annotations

import logging
from pathlib import Path

from connect_plugin.errors import ConfigError
from connect_plugin.server.transport.auth import read_private_text

log = logging.getLogger(__name__)

WHAT = "upstream token file"


def read_upstream_token(path: Path) -> str:
    """The token of the file at ``path``: its one non-empty line, without spaces."""
    lines = [line.strip() for line in read_private_text(path, WHAT).splitlines() if line.strip()]
    if len(lines) != 1 or len(lines[0].split()) != 1:
        raise ConfigError(
            f"the {WHAT} [{path}] must hold Spark Connect's token alone, on one line "
            f"(found {len(lines)} non-empty lines)"
        )
    return lines[0]


class UpstreamToken:
    """The current token, which each upstream call asks for (``TokenChannel``); ``reload``
    swaps it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._token = read_upstream_token(path)

    def __call__(self) -> str:
        return self._token

    def reload(self) -> bool:
        """Re-read the file; on a bad file keep the current token, log why, return False."""
        try:
            token = read_upstream_token(self.path)
        except ConfigError as exc:
            log.error("kept the previous upstream token: %s", exc)
            return False
        self._token = token
        log.info("re-read the upstream token file [%s]", self.path)
        return True
