"""Gateway configuration: one frozen dataclass.

Values are merged from, in order of precedence: explicit arguments (the CLI),
``CONNECT_PLUGIN_*`` environment variables, the TOML file
``<conf_dir>/connect-plugin.toml``, then the defaults below. The default
``conf_dir`` is the ``server_conf`` folder inside the installed package (a
wheel carries it there) or, in a checkout, the top-level ``server_conf/``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connect_plugin.errors import ConfigError
from connect_plugin.upstream_url import UpstreamUrl, parse_upstream

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ENV_PREFIX = "CONNECT_PLUGIN_"
CONF_FILE_NAME = "connect-plugin.toml"
SPARK_DEFAULT_PORT = 15002
PACKAGE_CONF_DIR = Path(__file__).resolve().parent / "server_conf"
CHECKOUT_CONF_DIR = Path(__file__).resolve().parents[1] / "server_conf"


def default_state_dir() -> Path:
    """A per-user folder, so two users on one machine never share state or temp data."""
    return Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state")) / (
        "connect-plugin"
    )


def default_workspace() -> Path:
    return default_state_dir() / "workspace"


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

TEMP_TABLE_FORMATS = ("parquet", "orc", "json", "csv", "text")
"""The formats Spark writes natively, which temporary tables may use."""

SHARE_LEVELS = ("server", "user", "group")
"""Who shares a Spark Connect server: everyone (one upstream), each user, or each group."""


@dataclasses.dataclass(frozen=True)
class Config:
    """Everything the gateway and the embedded Spark Connect server read."""

    host: str = "127.0.0.1"
    port: int = SPARK_DEFAULT_PORT
    upstream: str | None = dataclasses.field(default=None, repr=False)
    """``sc://host:port/;params``; its ``token`` is a secret, never shown (see ``upstream_url``)."""
    local: bool = False
    workspace: Path = dataclasses.field(default_factory=default_workspace)
    state_dir: Path = dataclasses.field(default_factory=default_state_dir)
    """Where the embedded Spark Connect server runs: its warehouse (``warehouse/``), its log
    (``logs/spark-connect.log``) and anything else Spark writes to its working folder."""
    temp_table_format: str = "parquet"
    conf_dir: Path | None = PACKAGE_CONF_DIR if PACKAGE_CONF_DIR.is_dir() else CHECKOUT_CONF_DIR
    spark_master: str = "local[*]"
    upstream_start_timeout_s: float = 180.0
    upstream_bind_host: str = "127.0.0.1"
    max_message_bytes: int = 256 * 1024 * 1024
    forward_extensions: tuple[str, ...] = ()
    shutdown_grace_s: float = 5.0
    log_level: str = "INFO"
    registry_path: Path | None = None
    """The session registry's SQLite file; default ``<workspace>/.connect-plugin/registry.sqlite3``."""
    detached_timeout_s: float = 60.0
    """How long a statement the gateway runs itself (CTTAS, a row change) goes on after the
    client's stream of it ended, for the client to reattach to it; 0: it stops with the
    stream."""
    recovery_timeout_s: float = 30.0
    """At start-up, how long one upstream call of the repair (and an interrupted write) may take."""
    session_idle_timeout_s: float = 0.0
    """How long a session with temporary tables may go without any call before the gateway
    releases it and deletes its tables; 0: the upstream's own session timeout
    (``spark.connect.session.manager.defaultSessionTimeout`` when the server sets it, else
    Spark's default of 60 minutes)."""
    session_sweep_interval_s: float = 60.0
    """How often idle sessions are expired, sessions the upstream lost are detected, and
    activity is written to the session registry."""
    quota_sessions_per_user: int = 16
    """How many sessions holding temporary tables one user may have; 0: no limit."""
    quota_tables_per_session: int = 100
    """How many temporary tables one session may hold; 0: no limit."""
    quota_bytes_per_session: int = 10 * 1024**3
    """How many bytes of temporary table files one session may hold; 0: no limit."""
    tls_cert_file: Path | None = None
    """PEM certificate (chain) the gateway serves TLS with; needs ``tls_key_file``."""
    tls_key_file: Path | None = None
    tls_client_ca_file: Path | None = None
    """PEM CA certificates; when set, every client must present a certificate they signed."""
    auth_tokens_file: Path | None = None
    """``user_id token`` per line: every RPC must carry one of the tokens (see ``server.transport.auth``)."""
    allow_unauthenticated: bool = False
    """Serve a non-loopback address without ``auth_tokens_file`` (anyone reaching it is anyone)."""
    audit_log: str | None = None
    """``stderr`` or a file (created 0600): one JSON line per statement handled and per
    refusal (``server.monitoring.audit``)."""
    metrics_port: int | None = None
    """Serve Prometheus metrics on this port of ``host`` (0: any free port; unset: none)."""
    upstream_token_file: Path | None = None
    """A private file holding Spark Connect's token, instead of ``token=`` in ``upstream``;
    re-read on SIGHUP (``server.transport.upstream_token``)."""
    stop_python_workers: bool = False
    """Spark's Python workers run on this machine as this user (``--local`` sets it): stop the
    worker daemons of each session that ends, and those idle for ``python_worker_idle_s``."""
    python_worker_idle_s: float = 600.0
    """With ``local``, how long a Python worker daemon of the embedded server may go without
    a worker before it is stopped (Spark starts it again when its session needs it); 0: never."""
    warm_up: bool = True
    """With ``local``, run one scan on the embedded server before serving, so that the first
    user's first scan is as fast as any later session's (``--no-warm-up``: serve at once)."""
    class_archive: bool = True
    """With ``local``, keep the embedded JVM's loaded classes in an archive under the user's
    cache folder (``spark_processes.class_archive``), written at the first start's stop and mapped by
    every later start, which then starts and runs its first query faster
    (``--no-class-archive``: neither)."""
    worker_forks: bool = True
    """With ``local``, start the embedded server's Python worker daemons from a fork server
    that has pyspark, pyarrow and the scan loaded (``connect_plugin.spark_processes.worker_forks``), instead of
    a new interpreter each (``--no-worker-forks``)."""
    share_level: str = "server"
    """``server``: every user's sessions go to one Spark Connect server; ``user`` or
    ``group``: each user, or each group of the tokens file, gets a server of its own (an
    engine), started here on first use with ``local`` or named in ``engines``."""
    engines: tuple[str, ...] = dataclasses.field(default=(), repr=False)
    """``owner=sc://host:port/;params`` per user or group: a Spark Connect server run
    elsewhere that is that owner's engine (its ``token`` is a secret, never shown)."""
    max_engines: int = 8
    """With ``share_level`` user or group, how many engines may run (or start) here at once;
    0: no limit. A new owner over it is refused; running engines go on."""
    engine_idle_timeout_s: float = 600.0
    """How long an engine started here may go without a call and without a session holding
    temporary tables before it is stopped (the next call starts it again); 0: never."""
    engine_driver_memory: str = "1g"
    """The driver (heap) memory of each engine started here (``spark.driver.memory``)."""
    engine_cores: int = 1
    """The cores each engine started here runs its tasks on (``local[N]``)."""
    engine_os_users: tuple[str, ...] = ()
    """``owner=os_user`` per user or group: the operating-system user (made by the operator)
    that owner's engine started here runs as; the gateway must run as root. Set, every owner
    needs one, and no two owners share one (``server.engine_users``)."""

    def __post_init__(self) -> None:
        if self.log_level.upper() not in LOG_LEVELS:
            raise ConfigError(
                f"log_level {self.log_level!r} is not one of {', '.join(LOG_LEVELS)}"
            )
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port {self.port} is outside 0..65535")
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise ConfigError(f"metrics_port {self.metrics_port} is outside 0..65535")
        if self.local and self.upstream:
            raise ConfigError("choose either local (embedded Spark) or upstream, not both")
        if self.upstream is not None:
            parse_upstream(self.upstream)
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ConfigError("TLS needs both tls_cert_file and tls_key_file (--tls-cert, --tls-key)")
        if self.tls_client_ca_file is not None and self.tls_cert_file is None:
            raise ConfigError(
                "tls_client_ca_file needs TLS: set tls_cert_file and tls_key_file as well"
            )
        if self.temp_table_format.lower() not in TEMP_TABLE_FORMATS:
            raise ConfigError(
                f"temp_table_format {self.temp_table_format!r} is not one of "
                + ", ".join(TEMP_TABLE_FORMATS)
            )
        if self.detached_timeout_s < 0:
            raise ConfigError(
                f"detached_timeout_s {self.detached_timeout_s!r} must be positive (or 0)"
            )
        if self.recovery_timeout_s <= 0:
            raise ConfigError(f"recovery_timeout_s {self.recovery_timeout_s!r} must be positive")
        if self.session_idle_timeout_s < 0:
            raise ConfigError(
                f"session_idle_timeout_s {self.session_idle_timeout_s!r} must be positive "
                "(or 0 for the upstream's session timeout)"
            )
        if self.upstream_token_file is not None and self.local:
            raise ConfigError(
                "upstream_token_file is for a server of your own (upstream); with local the "
                "embedded server gets a token of its own at each start"
            )
        if (
            self.upstream_token_file is not None
            and self.upstream is not None
            and parse_upstream(self.upstream).token is not None
        ):
            raise ConfigError(
                "give Spark Connect's token once: either token= in upstream or "
                "upstream_token_file, not both"
            )
        if self.python_worker_idle_s < 0:
            raise ConfigError(
                f"python_worker_idle_s {self.python_worker_idle_s!r} must be positive (or 0: never)"
            )
        if self.session_sweep_interval_s <= 0:
            raise ConfigError(
                f"session_sweep_interval_s {self.session_sweep_interval_s!r} must be positive"
            )
        for quota in (
            "quota_sessions_per_user",
            "quota_tables_per_session",
            "quota_bytes_per_session",
        ):
            if getattr(self, quota) < 0:
                raise ConfigError(f"{quota} {getattr(self, quota)!r} must be 0 (no limit) or more")
        self._check_share_level()

    def _check_share_level(self) -> None:
        if self.share_level not in SHARE_LEVELS:
            raise ConfigError(
                f"share_level {self.share_level!r} is not one of {', '.join(SHARE_LEVELS)}"
            )
        for number in ("max_engines", "engine_cores"):
            if getattr(self, number) < (1 if number == "engine_cores" else 0):
                raise ConfigError(f"{number} {getattr(self, number)!r} is too small")
        if self.engine_idle_timeout_s < 0:
            raise ConfigError(
                f"engine_idle_timeout_s {self.engine_idle_timeout_s!r} must be positive (or 0: never)"
            )
        static = self.static_engines
        os_users = self.os_users_of_engines
        if os_users and (self.share_level == "server" or not self.local):
            raise ConfigError(
                "engine_os_users names the operating-system user of each engine started here: "
                "set share_level to user or group, with local"
            )
        if self.share_level == "server":
            if static:
                raise ConfigError(
                    "engines names a server per user or group: set share_level to user or group"
                )
            return
        if self.auth_tokens_file is None:
            raise ConfigError(
                f"share_level {self.share_level} needs auth_tokens_file (--auth-tokens): an "
                "engine belongs to the user a token proves, not to the user a client claims"
            )
        if self.upstream is not None:
            raise ConfigError(
                f"share_level {self.share_level} gives each {self.share_level} a server of its "
                "own: start them here with local, or name them in engines, instead of upstream"
            )
        if not self.local and not static:
            raise ConfigError(
                f"share_level {self.share_level} needs engines: local (started here on first "
                "use) or engines (owner=sc://host:port per user or group)"
            )

    @property
    def static_engines(self) -> dict[str, UpstreamUrl]:
        """The engines of ``engines``, by owner; ``ConfigError`` naming a bad entry."""
        found: dict[str, UpstreamUrl] = {}
        for entry in self.engines:
            owner, sep, address = entry.partition("=sc://")
            owner = owner.strip()
            if not sep or not owner:
                raise ConfigError(
                    f"engines entry {entry.split(';', 1)[0]!r}: write owner=sc://host:port"
                )
            if owner in found:
                raise ConfigError(f"engines names {owner!r} twice")
            found[owner] = parse_upstream("sc://" + address.strip())
        return found

    @property
    def os_users_of_engines(self) -> dict[str, str]:
        """The operating-system user of each owner's engine (``engine_os_users``), by owner;
        ``ConfigError`` naming a bad entry, an owner named twice or a user given twice."""
        found: dict[str, str] = {}
        for entry in self.engine_os_users:
            owner, sep, os_user = (part.strip() for part in entry.partition("="))
            if not sep or not owner or not os_user:
                raise ConfigError(f"engine_os_users entry {entry!r}: write owner=os_user")
            if owner in found:
                raise ConfigError(f"engine_os_users names {owner!r} twice")
            if os_user in found.values():
                raise ConfigError(
                    f"engine_os_users gives the operating-system user {os_user!r} to two "
                    "owners: each engine needs a user of its own, or its files are the other's"
                )
            found[owner] = os_user
        return found

    @property
    def upstream_url(self) -> UpstreamUrl:
        """The parsed upstream URL."""
        if self.upstream is None:
            raise ConfigError("no upstream set: pass --upstream sc://host:port or --local")
        return parse_upstream(self.upstream)

    @property
    def upstream_target(self) -> str:
        """``host:port`` of the upstream, as a gRPC channel target."""
        return self.upstream_url.target


_FIELDS = {f.name: f for f in dataclasses.fields(Config)}


def _coerce(name: str, raw: Any) -> Any:
    """Turn a string (environment) or TOML value into the field's type."""
    field_type = str(_FIELDS[name].type).removesuffix(" | None")
    try:
        if field_type == "bool":
            if isinstance(raw, bool):
                return raw
            lowered = str(raw).strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if field_type == "int":
            return int(raw)
        if field_type == "float":
            return float(raw)
        if field_type.startswith("Path"):
            return Path(raw).expanduser()
        if field_type.startswith("tuple"):
            items = raw.split(",") if isinstance(raw, str) else list(raw)
            return tuple(item.strip() for item in items if item.strip())
        return str(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"setting {name}: cannot read {raw!r} as {field_type}") from exc


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, raw in env.items():
        if key.startswith(ENV_PREFIX):
            name = key.removeprefix(ENV_PREFIX).lower()
            if name in _FIELDS:
                values[name] = _coerce(name, raw)
    return values


RETIRED_SETTING = "temp_workspace_name"


def _from_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    section = data.get("gateway", {})
    if RETIRED_SETTING in section:
        raise ConfigError(
            f"{path}: {RETIRED_SETTING} is retired: temp tables are qualified as Spark "
            "qualifies temporary views, session.<name>; remove the setting"
        )
    unknown = sorted(set(section) - set(_FIELDS))
    if unknown:
        raise ConfigError(f"{path}: unknown settings in [gateway]: {', '.join(unknown)}")
    return {name: _coerce(name, raw) for name, raw in section.items()}


def load_config(
    arguments: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> Config:
    """Merge arguments over environment over the conf file over ``defaults`` (a command's
    own) over the dataclass's defaults."""
    explicit = {k: v for k, v in (arguments or {}).items() if v is not None}
    from_env = _from_env(os.environ if env is None else env)
    conf_dir = explicit.get("conf_dir") or from_env.get("conf_dir") or Config().conf_dir
    from_file = _from_file(Path(conf_dir) / CONF_FILE_NAME) if conf_dir else {}
    merged = {**(defaults or {}), **from_file, **from_env, **explicit}
    if conf_dir is not None:
        merged["conf_dir"] = Path(conf_dir)
    try:
        return Config(**merged)
    except TypeError as exc:
        raise ConfigError(str(exc)) from exc
