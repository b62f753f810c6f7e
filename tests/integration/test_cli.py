"""The ``connect-plugin serve`` command as an operator runs it."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pyspark.errors.exceptions.connect import SparkConnectGrpcException

from connect_plugin.server.embedded import TOKEN_VARIABLE, free_port
from connect_plugin.spark_processes.python_daemons import daemons
from tests.integration.support import Upstream, new_session, spark_connect_server_pids

CLI = str(Path(sys.executable).parent / "connect-plugin")
READY = "connect-plugin gateway ready at sc://127.0.0.1:{port}"


def _read_stdout_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    if not selector.select(timeout):
        pytest.fail(f"no line on stdout within {timeout} s")
    return process.stdout.readline().rstrip("\n")


@contextmanager
def _running(
    args: list[str], tmp_path: Path, cwd: Path | None = None
) -> Iterator[subprocess.Popen[str]]:
    stderr = (tmp_path / "stderr.log").open("w")
    process = subprocess.Popen(
        [CLI, *args], stdout=subprocess.PIPE, stderr=stderr, text=True, env=_env(), cwd=cwd
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
        stderr.close()


def _assert_only_the_gateway_reaches(jvm: int, log: Path) -> None:
    """The embedded server takes only calls with the token the gateway generated, which is
    in the JVM's environment alone: not on its command line, not in the gateway's log."""
    cmdline = Path(f"/proc/{jvm}/cmdline").read_bytes().decode().split("\0")
    environ = Path(f"/proc/{jvm}/environ").read_bytes().decode().split("\0")
    (token,) = [v.split("=", 1)[1] for v in environ if v.startswith(TOKEN_VARIABLE + "=")]
    assert len(token) >= 32
    assert not any(token in part for part in cmdline)
    assert token not in log.read_text()
    (port,) = [v.rsplit("=", 1)[1] for v in cmdline if "grpc.binding.port=" in v]
    direct = new_session(f"sc://127.0.0.1:{port}")
    try:
        with pytest.raises(SparkConnectGrpcException, match=r"UNAUTHENTICATED"):
            direct.range(1).count()
    finally:
        direct.stop()


def _parent(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return int(status.split("\nPPid:", 1)[1].split()[0])


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SPARK_REMOTE", None)
    return env


def _stop_and_check(process: subprocess.Popen[str], sig: signal.Signals) -> None:
    process.send_signal(sig)
    assert process.wait(60) == 0
    assert process.stdout is not None
    assert process.stdout.read() == "", "serve must print exactly one line"


def test_serve_upstream_prints_one_ready_line_and_stops_on_sigterm(
    upstream: Upstream, tmp_path: Path
) -> None:
    port = free_port()
    args = ["serve", "--upstream", upstream.address, "--port", str(port), "--workspace", str(tmp_path / "ws")]
    with _running(args, tmp_path) as process:
        assert _read_stdout_line(process, 60) == READY.format(port=port)
        session = new_session(f"sc://127.0.0.1:{port}")
        try:
            assert session.range(3).count() == 3
        finally:
            session.stop()
        _stop_and_check(process, signal.SIGTERM)


def test_serve_local_starts_and_stops_its_own_spark(tmp_path: Path) -> None:
    """The embedded server keeps its warehouse and log in the state folder, never in the
    folder the command runs from."""
    port = free_port()
    cwd, state = tmp_path / "cwd", tmp_path / "state"
    cwd.mkdir()
    try:
        args = ["serve", "--local", "--port", str(port), "--workspace", str(tmp_path / "ws")]
        with _running([*args, "--state-dir", str(state)], tmp_path, cwd=cwd) as process:
            assert _read_stdout_line(process, 240) == READY.format(port=port)
            started = spark_connect_server_pids(mentioning=str(state))
            assert len(started) == 1, started
            assert "warmed up Spark and its Python workers" in (tmp_path / "stderr.log").read_text()
            deadline = time.monotonic() + 10
            while any(_parent(d.pid) in started for d in daemons()):
                assert time.monotonic() < deadline, "the warm-up scan's Python workers outlived it"
                time.sleep(0.2)
            (jvm,) = started
            _assert_only_the_gateway_reaches(jvm, tmp_path / "stderr.log")
            session = new_session(f"sc://127.0.0.1:{port}")
            try:
                assert session.sql("SELECT 6 * 7 AS x").first().x == 42  # type: ignore[union-attr]
                session.sql("CREATE TABLE kept USING parquet AS SELECT 1 AS x").collect()
            finally:
                session.stop()
            _stop_and_check(process, signal.SIGINT)
        assert list((state / "warehouse" / "kept").glob("*.parquet"))
        assert "SparkConnectServer" in (state / "logs" / "spark-connect.log").read_text()
        assert list(cwd.iterdir()) == []
        deadline = time.monotonic() + 30
        while started & spark_connect_server_pids() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not started & spark_connect_server_pids(), "the embedded JVM outlived the CLI"
    finally:
        for pid in spark_connect_server_pids(mentioning=str(state)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_serve_local_without_java_says_so(tmp_path: Path) -> None:
    env = {k: v for k, v in _env().items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)
    result = subprocess.run(
        [CLI, "serve", "--local", "--port", "0", "--workspace", str(tmp_path / "ws")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Java 17 or newer is needed" in result.stderr


def test_serve_refuses_a_busy_port(upstream: Upstream, gateway_port_in_use: int, tmp_path: Path) -> None:
    result = subprocess.run(
        [CLI, "serve", "--upstream", upstream.address, "--port", str(gateway_port_in_use)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{gateway_port_in_use}" in result.stderr


@pytest.fixture
def gateway_port_in_use() -> Iterator[int]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def _taken_port() -> Iterator[int]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@contextmanager
def _workspace_held(workspace: Path) -> Iterator[None]:
    from connect_plugin.server.sessions.workspace import Workspace

    lock = Workspace(workspace).lock()
    try:
        yield
    finally:
        lock.release()


def _port_taken(tmp_path: Path, args: list[str]) -> Iterator[str]:
    for port in _taken_port():
        args[args.index("--port") + 1] = str(port)
        yield f"the gateway cannot listen on 127.0.0.1:{port} (Address already in use); choose another --port"


def _metrics_port_taken(tmp_path: Path, args: list[str]) -> Iterator[str]:
    for port in _taken_port():
        args += ["--metrics-port", str(port)]
        yield f"cannot listen on 127.0.0.1:{port} (Address already in use); choose another --metrics-port"


def _workspace_in_use(tmp_path: Path, args: list[str]) -> Iterator[str]:
    with _workspace_held(tmp_path / "ws"):
        yield f"is in use by another gateway (pid {os.getpid()}); stop that gateway"


def _workspace_a_file(tmp_path: Path, args: list[str]) -> Iterator[str]:
    (tmp_path / "ws").write_text("not a folder")
    yield f"cannot create the private folder [{tmp_path / 'ws'}]"


def _tokens_missing(tmp_path: Path, args: list[str]) -> Iterator[str]:
    args += ["--auth-tokens", str(tmp_path / "tokens")]
    yield str(tmp_path / "tokens")


def _audit_log_unwritable(tmp_path: Path, args: list[str]) -> Iterator[str]:
    args += ["--audit-log", str(tmp_path / "missing" / "audit.log")]
    yield f"cannot open the audit log [{tmp_path / 'missing' / 'audit.log'}]: No such file"


def _tls_key_missing(tmp_path: Path, args: list[str]) -> Iterator[str]:
    (tmp_path / "cert.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    args += ["--tls-cert", str(tmp_path / "cert.pem"), "--tls-key", str(tmp_path / "key.pem")]
    yield f"cannot read the TLS key [{tmp_path / 'key.pem'}]"


def _open_without_tokens(tmp_path: Path, args: list[str]) -> Iterator[str]:
    args += ["--host", "0.0.0.0"]
    yield "the gateway would serve 0.0.0.0 without authentication"


@pytest.mark.parametrize(
    "problem",
    [
        _port_taken,
        _metrics_port_taken,
        _workspace_in_use,
        _workspace_a_file,
        _tokens_missing,
        _audit_log_unwritable,
        _tls_key_missing,
        _open_without_tokens,
    ],
    ids=lambda problem: problem.__name__.strip("_"),
)
def test_serve_local_says_what_stops_it_before_starting_spark(
    tmp_path: Path, problem: Callable[[Path, list[str]], Iterator[str]]
) -> None:
    """What a start can check without Spark is a one-line error and exit code 2 before
    Spark starts (its state folder is never made): not after the JVM's seconds of start-up,
    nor after a raw gRPC line."""
    state = tmp_path / "state"
    args = ["serve", "--local", "--port", "0", "--workspace", str(tmp_path / "ws")]
    args += ["--state-dir", str(state)]
    with contextlib.contextmanager(problem)(tmp_path, args) as expected:
        began = time.monotonic()
        result = subprocess.run(
            [CLI, *args], env=_env(), capture_output=True, text=True, timeout=120, check=False
        )
        elapsed = time.monotonic() - began
    print(f"{problem.__name__.strip('_')}: refused after {elapsed:.1f} s")
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr.startswith("connect-plugin: error: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert expected in result.stderr
    assert not state.exists(), "Spark was started before the check"
    assert not spark_connect_server_pids(mentioning=str(state))


def test_a_local_gateways_restart_ends_its_sessions_and_the_client_is_told_why(
    tmp_path: Path,
) -> None:
    """``--local`` stops its Spark with it, and every session with that Spark: a client of
    one gets Spark's SESSION_CHANGED ("... has restarted. Please reconnect."), not the
    NO_ACTIVE_SESSION pyspark raised when it fetched that error's details through the
    session it had just closed; a new session works, and the old one's tables are gone."""
    port = free_port()
    workspace = tmp_path / "ws"
    args = ["serve", "--local", "--port", str(port), "--workspace", str(workspace)]
    args += ["--state-dir", str(tmp_path / "state"), "--no-warm-up"]
    address = f"sc://127.0.0.1:{port}"
    with _running(args, tmp_path) as process:
        assert _read_stdout_line(process, 240) == READY.format(port=port)
        old = new_session(address)
        old.sql("CREATE TEMPORARY TABLE kept AS SELECT 1 AS x").collect()
        folder = workspace / old.client._session_id
        assert folder.is_dir()
        _stop_and_check(process, signal.SIGTERM)
    with _running(args, tmp_path) as process:
        assert _read_stdout_line(process, 240) == READY.format(port=port)
        assert not folder.exists(), "the ended session's tables were kept"
        with pytest.raises(SparkConnectGrpcException) as raised:
            old.sql("SELECT * FROM kept").collect()
        assert "INVALID_HANDLE.SESSION_CHANGED" in str(raised.value)
        assert "has restarted. Please reconnect." in str(raised.value)
        old.release_session_on_close = False
        old.stop()
        fresh = new_session(address)
        try:
            assert fresh.sql("SHOW TEMPORARY TABLES").collect() == []
            assert fresh.range(3).count() == 3
        finally:
            fresh.stop()
        _stop_and_check(process, signal.SIGTERM)
