"""What the gateway checks and claims before anything slow starts.

``prepare(config)`` runs every start-up check that needs no Spark: the
ports it will listen on are free, the TLS files, the tokens file and the
upstream token file read, the workspace is usable and this gateway's alone,
the audit log opens. It returns what those read and claimed (``Prepared``),
which the gateway then serves with. ``Stack`` runs it before it starts an
embedded Spark Connect server (several seconds), so that a taken port or a
workspace in use is a one-line error at once instead of after Spark's start;
a gateway started on its own runs it first thing.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
from dataclasses import dataclass
from pathlib import Path

import grpc

from connect_plugin.config import Config
from connect_plugin.errors import ConfigError
from connect_plugin.server.monitoring.audit import AuditLog
from connect_plugin.server.sessions.workspace import Workspace, WorkspaceLock
from connect_plugin.server.transport.auth import TokenAuthenticator
from connect_plugin.server.transport.upstream_token import UpstreamToken

log = logging.getLogger(__name__)

_TAKEN = (errno.EADDRINUSE, errno.EACCES)
"""Bind errors that mean the port cannot be had, whichever address of the host gave them."""


@dataclass
class Prepared:
    """What the checks read and claimed: the gateway's for as long as it runs."""

    credentials: grpc.ServerCredentials | None
    authenticator: TokenAuthenticator | None
    upstream_token: UpstreamToken | None
    workspace_lock: WorkspaceLock
    audit: AuditLog | None

    def release(self) -> None:
        """Give back what was claimed (for a start that goes no further)."""
        try:
            if self.audit is not None:
                self.audit.close()
        finally:
            self.workspace_lock.release()


def prepare(config: Config) -> Prepared:
    """Check everything a start can check without Spark, and claim the workspace."""
    check_port(config.host, config.port, "--port")
    if config.metrics_port is not None:
        check_port(config.host, config.metrics_port, "--metrics-port")
    credentials = server_credentials(config)
    checked_authenticator = authenticator(config)
    upstream_token = (
        None if config.upstream_token_file is None else UpstreamToken(config.upstream_token_file)
    )
    lock = Workspace(config.workspace).lock(
        config.registry_path, passable=bool(config.engine_os_users)
    )
    try:
        audit = None if config.audit_log is None else open_audit_log(config.audit_log)
    except BaseException:
        lock.release()
        raise
    return Prepared(credentials, checked_authenticator, upstream_token, lock, audit)


def open_audit_log(target: str) -> AuditLog:
    """The audit log, or a ``ConfigError`` saying why it cannot be written."""
    try:
        return AuditLog(target)
    except OSError as exc:
        raise ConfigError(
            f"cannot open the audit log [{target}]: {exc.strerror or exc}; give --audit-log a "
            "file the gateway may write, or 'stderr'"
        ) from exc


def check_port(host: str, port: int, option: str) -> None:
    """``ConfigError`` when ``host:port`` cannot be listened on (taken, not permitted, not an
    address of this machine); port 0 (any free one) always can."""
    if port == 0:
        return
    try:
        found = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise ConfigError(
            f"the gateway cannot listen on {host}:{port} ({exc.strerror}); choose another --host"
        ) from None
    problems: list[OSError] = []
    for family, kind, protocol, _, address in found:
        with socket.socket(family, kind, protocol) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                problems.append(exc)
    taken = [p for p in problems if p.errno in _TAKEN]
    if taken or len(problems) == len(found):
        reason = (taken or problems)[0].strerror
        raise ConfigError(
            f"the gateway cannot listen on {host}:{port} ({reason}); choose another {option}"
        )


def _read_pem(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the TLS {what} [{path}]: {exc.strerror}") from exc


def server_credentials(config: Config) -> grpc.ServerCredentials | None:
    """TLS credentials of the gateway's port (None: plaintext); client certificates if asked."""
    if config.tls_cert_file is None or config.tls_key_file is None:
        return None
    key = _read_pem(config.tls_key_file, "key")
    chain = _read_pem(config.tls_cert_file, "certificate")
    if b"PRIVATE KEY-----" not in key:
        raise ConfigError(f"the TLS key [{config.tls_key_file}] holds no PEM private key")
    if b"-----BEGIN CERTIFICATE-----" not in chain:
        raise ConfigError(f"the TLS certificate [{config.tls_cert_file}] holds no PEM certificate")
    if config.tls_client_ca_file is None:
        return grpc.ssl_server_credentials([(key, chain)])
    roots = _read_pem(config.tls_client_ca_file, "client CA")
    return grpc.ssl_server_credentials([(key, chain)], roots, require_client_auth=True)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def authenticator(config: Config) -> TokenAuthenticator | None:
    """The token check of every call; None (with a warning) when the gateway authenticates no one.

    Without tokens, only a loopback address is served, unless ``allow_unauthenticated``.
    """
    if config.auth_tokens_file is not None:
        return TokenAuthenticator(config.auth_tokens_file)
    if _loopback(config.host):
        return None
    if not config.allow_unauthenticated:
        raise ConfigError(
            f"the gateway would serve {config.host} without authentication; give it a tokens "
            "file (--auth-tokens FILE), listen on 127.0.0.1, or accept anyone who reaches the "
            "port with --allow-unauthenticated"
        )
    log.warning(
        "serving %s without authentication: anyone who reaches the port can act in any session",
        config.host,
    )
    return None
