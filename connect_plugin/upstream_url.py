"""The upstream Spark Connect URL: ``sc://host:port/;param=value;...``.

The parameters are the ones a Spark Connect client accepts (``use_ssl``,
``token``, ``user_id``, ``user_agent``, ``session_id`` and the gRPC keepalive
ones); any other is a start-up error naming it. A ``token`` is the upstream's
pre-shared secret (Spark's ``spark.connect.authenticate.token``): the gateway
sends it on every call it makes, and ``redacted`` is the URL as it may be
logged or printed.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

from connect_plugin.errors import ConfigError

SPARK_DEFAULT_PORT = 15002
KNOWN_PARAMS = frozenset(
    (
        "use_ssl",
        "token",
        "user_id",
        "user_agent",
        "session_id",
        "grpc_keepalive_enabled",
        "grpc_keepalive_time_ms",
        "grpc_keepalive_timeout_ms",
        "grpc_keepalive_without_calls",
    )
)
REDACTED = "<redacted>"
LOOPBACK_HOSTS = frozenset(("localhost", "127.0.0.1", "::1", "[::1]"))


@dataclass(frozen=True)
class UpstreamUrl:
    """A parsed ``sc://`` URL of the upstream."""

    host: str
    port: int
    params: tuple[tuple[str, str], ...] = ()

    @property
    def target(self) -> str:
        """``host:port``, as a gRPC channel target."""
        return f"{self.host}:{self.port}"

    def param(self, name: str) -> str | None:
        return dict(self.params).get(name)

    @property
    def token(self) -> str | None:
        return self.param("token")

    @property
    def use_ssl(self) -> bool:
        return (self.param("use_ssl") or "").lower() == "true"

    @property
    def secure(self) -> bool:
        """Whether the channel carries credentials: TLS, or a token (as pyspark decides)."""
        return self.use_ssl or self.token is not None

    @property
    def loopback(self) -> bool:
        return self.host in LOOPBACK_HOSTS

    @property
    def redacted(self) -> str:
        """The URL with the token's value replaced, safe to log and print."""
        params = "".join(
            f";{key}={REDACTED if key == 'token' else value}" for key, value in self.params
        )
        return f"sc://{self.host}:{self.port}/{params}" if params else f"sc://{self.host}:{self.port}"


def parse_upstream(url: str) -> UpstreamUrl:
    """``url`` parsed; ``ConfigError`` (never quoting a token) when it is not a Spark Connect URL."""
    if not url.startswith("sc://"):
        raise ConfigError(
            f"upstream {_shown(url)!r} must be a Spark Connect URL such as sc://host:15002"
        )
    location, _, rest = url.removeprefix("sc://").partition("/")
    parsed = urllib.parse.urlsplit("//" + location)
    try:
        port = parsed.port or SPARK_DEFAULT_PORT
    except ValueError as exc:
        raise ConfigError(f"upstream {_shown(url)!r}: the port is not a number 0..65535") from exc
    if not parsed.hostname:
        raise ConfigError(f"upstream {_shown(url)!r} names no host")
    host = f"[{parsed.hostname}]" if ":" in parsed.hostname else parsed.hostname
    params: list[tuple[str, str]] = []
    for item in filter(None, rest.split(";")):
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"upstream parameter {key!r} has no value (write {key}=...)")
        if key not in KNOWN_PARAMS:
            raise ConfigError(
                f"upstream parameter {key!r} is unknown; Spark Connect URLs accept "
                + ", ".join(sorted(KNOWN_PARAMS))
            )
        params.append((key, urllib.parse.unquote(value)))
    found = UpstreamUrl(host, port, tuple(params))
    if found.token is not None and not found.token:
        raise ConfigError("upstream parameter 'token' is empty")
    return found


def redact(url: str) -> str:
    """``url`` safe to log: parsed and redacted, or with everything after ``;`` hidden."""
    try:
        return parse_upstream(url).redacted
    except ConfigError:
        return _shown(url)


def _shown(url: str) -> str:
    return url.split(";", 1)[0] + (f";{REDACTED}" if ";" in url else "")
