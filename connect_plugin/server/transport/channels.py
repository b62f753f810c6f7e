"""gRPC transport settings of the gateway, on both of its sides.

Clients ping every 60 s (pyspark's keepalive defaults); gRPC's default server
policy answers such pings with GOAWAY ``too_many_pings``, so the server
accepts them. Message sizes are unbounded by the gateway: Spark and the client
already enforce theirs, and the gateway must not be the narrowest pipe.
"""

from __future__ import annotations

from typing import Any

import grpc

from connect_plugin.config import Config
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


def upstream_credentials(
    url: UpstreamUrl, token: grpc.CallCredentials | None = None
) -> grpc.ChannelCredentials | None:
    """The upstream channel's credentials, chosen as pyspark chooses them; None: plaintext.

    ``use_ssl=true`` means TLS (roots from ``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH`` or gRPC's
    own); a token (the URL's ``token``, or ``token`` from the upstream token file) means
    TLS too, except to a loopback host, where gRPC's local credentials carry it
    unencrypted. The token goes as ``authorization: Bearer`` on every call the channel
    makes, the gateway's own included.
    """
    if url.token is not None:
        token = grpc.access_token_call_credentials(url.token)
    if not url.use_ssl and token is None:
        return None
    if not url.use_ssl and url.loopback:
        credentials = grpc.local_channel_credentials()
    else:
        credentials = grpc.ssl_channel_credentials()
    if token is not None:
        credentials = grpc.composite_channel_credentials(credentials, token)
    return credentials


def upstream_channel(config: Config, token: grpc.CallCredentials | None = None) -> grpc.aio.Channel:
    """The channel to the upstream Spark Connect server, pinging as pyspark does; ``token``:
    call credentials carrying Spark's token (from the upstream token file)."""
    url = config.upstream_url
    options: list[tuple[str, Any]] = [
        *_size_options(config),
        ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.initial_reconnect_backoff_ms", MAX_UPSTREAM_RECONNECT_BACKOFF_MS),
        ("grpc.max_reconnect_backoff_ms", MAX_UPSTREAM_RECONNECT_BACKOFF_MS),
    ]
    credentials = upstream_credentials(url, token)
    if credentials is None:
        return grpc.aio.insecure_channel(url.target, options=options)
    return grpc.aio.secure_channel(url.target, credentials, options=options)
