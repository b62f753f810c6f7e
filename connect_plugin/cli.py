"""``connect-plugin``: run the gateway (embedded Spark or in front of one) or the demo; stop
idle Python worker daemons beside a Spark process that runs without a gateway.

The command comes with the base install; the gateway needs the server install,
so ``serve`` and ``demo`` check for it first and print the pip command that
brings it.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from connect_plugin import __version__
from connect_plugin.config import SPARK_DEFAULT_PORT, Config, load_config
from connect_plugin.errors import ConnectPluginError
from connect_plugin.extras import require_server

READY_LINE = "connect-plugin gateway ready at {address}"
DEMO_DEFAULTS = {"log_level": "WARNING"}
"""The demo's own defaults, under every source of settings: its output is its own lines."""

log = logging.getLogger("connect_plugin")


DESCRIPTION = (
    "Run the connect-plugin gateway in front of Spark Connect (an embedded server, or one "
    "of yours), run a short demo of it, or stop idle Python worker daemons beside a Spark "
    "process that runs without a gateway."
)
SERVE = (
    "Run the gateway until SIGINT or SIGTERM (SIGHUP re-reads the tokens files): with "
    "--local in front of an embedded Spark Connect server started from the pyspark wheel "
    "(Java 17+), or in front of your own with --upstream. Prints one line, the address "
    "clients connect to, once it serves. Settings not given here come from CONNECT_PLUGIN_* "
    "environment variables, then from connect-plugin.toml in --conf-dir."
)
DEMO = (
    "Start an embedded Spark Connect server and the gateway on free ports, run a short "
    "session through them (temp tables, a scan), print what it did and stop. Only the "
    "demo's own lines are printed, unless --log-level asks for more."
)
STOP_IDLE = (
    "Stop the Python worker daemons under one Spark process that have had no worker for "
    "--idle-s seconds, until that process is gone: for a Spark that runs without a "
    "gateway (the image's worker and connect roles); serve --local does this itself."
)


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The command's parser and each subcommand's (by name)."""
    parser = argparse.ArgumentParser(prog="connect-plugin", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"connect-plugin {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workspace", type=Path, help="root folder of session temp tables")
    common.add_argument(
        "--state-dir", type=Path, help="folder of the embedded server's warehouse and logs"
    )
    common.add_argument("--conf-dir", type=Path, help="folder with connect-plugin.toml and spark-defaults.conf")
    common.add_argument(
        "--log-level",
        help="DEBUG, INFO, WARNING, ERROR (serve: INFO by default, demo: WARNING)",
    )

    serve = commands.add_parser(
        "serve", parents=[common], help="run the gateway until stopped", description=SERVE
    )
    where = serve.add_mutually_exclusive_group()
    where.add_argument("--local", action="store_true", default=None, help="start an embedded Spark Connect server")
    where.add_argument("--upstream", help="front an existing server, e.g. sc://spark:15002")
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help=f"port to listen on (default {SPARK_DEFAULT_PORT}; 0 = any free)")
    serve.add_argument("--tls-cert", dest="tls_cert_file", type=Path, help="PEM certificate: serve TLS")
    serve.add_argument("--tls-key", dest="tls_key_file", type=Path, help="PEM private key of --tls-cert")
    serve.add_argument(
        "--tls-client-ca", dest="tls_client_ca_file", type=Path, help="require client certificates of this CA"
    )
    serve.add_argument(
        "--auth-tokens", dest="auth_tokens_file", type=Path, help="file of 'user_id token' lines (mode 600)"
    )
    serve.add_argument(
        "--audit-log",
        dest="audit_log",
        help="'stderr' or a file (mode 600): a JSON line per statement handled and per refusal",
    )
    serve.add_argument(
        "--metrics-port",
        dest="metrics_port",
        type=int,
        help="serve Prometheus metrics on this port of --host (0 = any free)",
    )
    serve.add_argument(
        "--upstream-token-file",
        dest="upstream_token_file",
        type=Path,
        help="file holding Spark Connect's token (mode 600), re-read on SIGHUP",
    )
    serve.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        default=None,
        help="serve a non-loopback address without --auth-tokens",
    )
    serve.add_argument(
        "--share-level",
        dest="share_level",
        choices=("server", "user", "group"),
        help="server: one Spark for everyone (default); user, group: a Spark Connect server "
        "per user or per group of --auth-tokens, started on first use with --local",
    )
    serve.add_argument(
        "--max-engines", dest="max_engines", type=int, help="engines that may run at once (0: no limit)"
    )
    serve.add_argument(
        "--engine-idle-timeout",
        dest="engine_idle_timeout_s",
        type=float,
        help="seconds an engine may go unused before it stops (0: never)",
    )
    serve.add_argument(
        "--engine-memory", dest="engine_driver_memory", help="driver memory of each engine, e.g. 1g"
    )
    serve.add_argument(
        "--engine-cores", dest="engine_cores", type=int, help="cores of each engine's tasks"
    )
    serve.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        default=None,
        help="with --local, serve without first running one scan on the embedded server",
    )
    serve.add_argument(
        "--no-class-archive",
        dest="class_archive",
        action="store_false",
        default=None,
        help="with --local, neither write nor map the embedded JVM's class archive",
    )
    serve.add_argument(
        "--no-worker-forks",
        dest="worker_forks",
        action="store_false",
        default=None,
        help="with --local, start each Python worker daemon as a new interpreter",
    )

    demo = commands.add_parser(
        "demo",
        parents=[common],
        help="start the embedded stack on free ports, run a short session, stop",
        description=DEMO,
    )

    idle = commands.add_parser(
        "stop-idle-python-workers",
        help="stop the idle Python worker daemons under a Spark process",
        description=STOP_IDLE,
    )
    idle.add_argument("--idle-s", type=float, required=True, help="seconds without a worker")
    idle.add_argument(
        "--while-pid",
        type=int,
        required=True,
        help="the Spark process whose daemons are looked at; stop once it is gone",
    )
    return parser, {"serve": serve, "demo": demo, "stop-idle-python-workers": idle}


def _stop_idle_python_workers(idle_s: float, while_pid: int) -> int:
    """Sweep for idle daemons under ``while_pid`` until that process is gone."""
    from connect_plugin.spark_processes.python_daemons import IdleDaemons

    IdleDaemons(idle_s, under=while_pid).run(
        lambda: Path(f"/proc/{while_pid}").exists(), threading.Event()
    )
    return 0


def _configure_logging(config: Config) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=config.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _serve(config: Config) -> int:
    from connect_plugin.server.stack import Stack

    if not config.local and config.upstream is None and config.share_level == "server":
        raise ConnectPluginError("say where Spark is: --local (embedded) or --upstream sc://host:port")
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        stop.set()

    stack = Stack(config)

    def on_hangup(signum: int, frame: FrameType | None) -> None:
        if stack.gateway is not None:
            stack.gateway.reload_tokens()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, on_hangup)
    try:
        stack.start()
        assert stack.gateway is not None
        print(READY_LINE.format(address=stack.gateway.address), flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        stack.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser, commands = _parser()
    args, unknown = parser.parse_known_args(argv)
    command = commands[args.command]
    if unknown:
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "stop-idle-python-workers":
        if args.idle_s <= 0:
            command.error("--idle-s must be positive")
        logging.basicConfig(stream=sys.stderr, level="INFO")
        return _stop_idle_python_workers(args.idle_s, args.while_pid)
    arguments: dict[str, Any] = {
        key: value for key, value in vars(args).items() if key != "command" and value is not None
    }
    try:
        if args.command == "demo":
            arguments.update(local=True, port=0)
            config = load_config(arguments, defaults=DEMO_DEFAULTS)
        else:
            config = load_config(arguments)
        _configure_logging(config)
        require_server()
        if args.command == "demo":
            from connect_plugin.demo import run_demo

            return run_demo(config)
        return _serve(config)
    except ConnectPluginError as exc:
        print(f"connect-plugin: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
