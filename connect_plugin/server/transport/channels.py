"""gRPC transport settings of the gateway, on both of its sides.

Clients ping every 60 s (pyspark's keepalive defaults); gRPC's default server
policy answers such pings with GOAWAY ``too_many_pings``, so the server
accepts them. Message sizes are unbounded by the gateway: Spark and the client
already enforce theirs, and the gateway must not be the narrowest pipe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from connect_plugin.config import Config
from connect_plugin.server.transport.auth import AUTHORIZATION
from connect_plugin.upstream_url import UpstreamUrl

KEEPALIVE_TIME_MS = 60_000
KEEPALIVE_TIMEOUT_MS = 20_000
MIN_CLIENT_PING_INTERVAL_MS = 10_000
MAX_UPSTREAM_RECONNECT_BACKOFF_MS = 1_000
"""gRPC's default backoff grows to 120 s; a restarted upstream must serve new sessions at once."""


def _size_options(config: Config) -> list[tuple[str, Any]]:
    return [
        ("grpc.max_send_message_length", config.max_message_bytes),
        ("grpc.max_receive_message_length", config.max_message_bytes),
    ]


def server_options(config: Config) -> list[tuple[str, Any]]:
    """Options of the gateway's own server (the side clients talk to)."""
    return [
        *_size_options(config),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_recv_ping_interval_without_data_ms", MIN_CLIENT_PING_INTERVAL_MS),
        ("grpc.http2.max_ping_strikes", 0),
        ("grpc.so_reuseport", 0),
    ]


def upstream_credentials(url: UpstreamUrl, token: bool = False) -> grpc.ChannelCredentials | None:
    """The upstream channel's credentials, chosen as pyspark chooses them; None: plaintext.

    ``use_ssl=true`` means TLS (roots from ``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH`` or gRPC's
    own); a token (the URL's ``token``, or ``token``: one from the upstream token file)
    means TLS too, except to a loopback host, where gRPC's local credentials carry it
    unencrypted. ``TokenChannel`` sends the token.
    """
    if not url.use_ssl and url.token is None and not token:
        return None
    if not url.use_ssl and url.loopback:
        return grpc.local_channel_credentials()
    return grpc.ssl_channel_credentials()


class TokenChannel:
    """A channel that sends Spark's token as ``authorization: Bearer`` in every call's
    metadata, the gateway's own calls included.

    gRPC's call credentials would send it too, but they run their metadata
    plugin on a new thread for every call, and the event loop waits for each
    such thread to start: a tenth of the gateway's time when it relays small
    queries.
    """

    def __init__(self, channel: grpc.aio.Channel, token: Callable[[], str]) -> None:
        self._channel = channel
        self._token = token

    def _with_token(self, multicallable: Any) -> Any:
        def call(request: Any, *, metadata: Any = None, **options: Any) -> Any:
            header = (AUTHORIZATION, f"Bearer {self._token()}")
            return multicallable(request, metadata=(*(metadata or ()), header), **options)

        return call

    def unary_unary(self, *args: Any, **kwargs: Any) -> Any:
        return self._with_token(self._channel.unary_unary(*args, **kwargs))

    def unary_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._with_token(self._channel.unary_stream(*args, **kwargs))

    def stream_unary(self, *args: Any, **kwargs: Any) -> Any:
        return self._with_token(self._channel.stream_unary(*args, **kwargs))

    def stream_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._with_token(self._channel.stream_stream(*args, **kwargs))

    async def close(self, grace: float | None = None) -> None:
        await self._channel.close(grace)


def upstream_channel(config: Config, token: Callable[[], str] | None = None) -> grpc.aio.Channel:
    """The channel to the upstream Spark Connect server, pinging as pyspark does; ``token``:
    gives Spark's token for each call (from the upstream token file; by default the URL's
    ``token``, if any)."""
    return channel_to(config.upstream_url, config, token)


def channel_to(
    url: UpstreamUrl, config: Config, token: Callable[[], str] | None = None
) -> grpc.aio.Channel:
    """The channel to the Spark Connect server at ``url`` (the upstream, or an engine)."""
    options: list[tuple[str, Any]] = [
        *_size_options(config),
        ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.initial_reconnect_backoff_ms", MAX_UPSTREAM_RECONNECT_BACKOFF_MS),
        ("grpc.max_reconnect_backoff_ms", MAX_UPSTREAM_RECONNECT_BACKOFF_MS),
    ]
    if token is None and url.token is not None:
        fixed = url.token

        def token() -> str:
            return fixed

    credentials = upstream_credentials(url, token is not None)
    if credentials is None:
        return grpc.aio.insecure_channel(url.target, options=options)
    channel = grpc.aio.secure_channel(url.target, credentials, options=options)
    return channel if token is None else TokenChannel(channel, token)
