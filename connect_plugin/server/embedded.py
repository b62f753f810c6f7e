"""An embedded Spark Connect server started from the jars inside the pyspark wheel.

The JVM runs in its own process group so that stopping it (or the gateway
dying) takes every child with it, and its Python workers use this
interpreter (or the one given), so the plugin's data source is importable on
the server side. Given a state folder, the JVM runs there and keeps its
warehouse and log under it, so nothing lands in the folder it was started from.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import grpc

from connect_plugin.errors import EnvironmentProblem, UpstreamUnavailable
from connect_plugin.extras import SERVER_INSTALL
from connect_plugin.server.sessions.private_files import open_private
from connect_plugin.spark_processes.class_archive import (
    SUBMIT_OPTIONS,
    ArchiveUse,
    archive_use,
    with_option,
)
from connect_plugin.spark_processes.process_users import as_user, user_options
from connect_plugin.spark_processes.worker_forks import WorkerForks
from connect_plugin.worker_python import FORKS_VARIABLE, launcher

log = logging.getLogger(__name__)

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
MIN_JAVA = 17
SPARK_DEFAULTS = "spark-defaults.conf"
STOP_TIMEOUT_S = 20.0
ARCHIVING_STOP_TIMEOUT_S = 180.0
"""How long a JVM writing its class archive at exit may take to stop (ten seconds here)."""
READY_POLL_S = 0.25
WAREHOUSE_DIR = "warehouse"
LOG_FILE = Path("logs") / "spark-connect.log"
SERVER_DEFAULTS = {"spark.sql.json.filterPushdown.enabled": "false"}
"""Settings every server started here gets unless its ``spark-defaults.conf`` or the caller
sets them. Spark's json reader fails a query whose filter compares a struct column with a
struct value (``k IN (named_struct(...), ...)``, ``k <=> ...``, ``k > ... OR ...``:
``FAILED_READ_FILE`` caused by ``empty.reduceLeft`` in ``JsonFilters``, which cannot make a
literal of a struct) when it pushes the filter into the parser; without the push Spark
filters the rows it read, as it does for every other format. A session may set it back."""
TOKEN_VARIABLE = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
"""Where Spark Connect 4.0+ reads ``spark.connect.authenticate.token`` from its environment."""


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark wheel."""
    try:
        import pyspark
    except ImportError:
        raise EnvironmentProblem(
            f"pyspark is not installed; an embedded Spark Connect server needs: {SERVER_INSTALL}"
        ) from None
    home = Path(pyspark.__file__).parent
    if not (home / "jars").is_dir():
        raise EnvironmentProblem(
            f"pyspark at {home} has no jars/ folder (pyspark-client carries none); an "
            f"embedded Spark Connect server needs full pyspark: {SERVER_INSTALL}"
        )
    return home


def parse_java_version(text: str) -> int:
    """The feature version of a ``java -version`` banner (8 for "1.8.0_392")."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if match is None:
        raise EnvironmentProblem(f"cannot read the Java version from: {text.strip()[:200]!r}")
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def find_java(env: Mapping[str, str] | None = None) -> tuple[Path, int]:
    """The ``java`` Spark will use (JAVA_HOME first, then PATH) and its version."""
    env = os.environ if env is None else env
    java_home = env.get("JAVA_HOME")
    candidate = Path(java_home) / "bin" / "java" if java_home else None
    if candidate is None or not candidate.is_file():
        found = shutil.which("java", path=env.get("PATH", ""))
        candidate = Path(found) if found else None
    if candidate is None:
        raise EnvironmentProblem(
            f"Java {MIN_JAVA} or newer is needed to run Spark, and no java was found "
            "(JAVA_HOME is not set to a JDK and java is not on PATH); "
            "install a JDK, e.g. apt-get install openjdk-17-jre-headless"
        )
    banner = subprocess.run(
        [str(candidate), "-version"], capture_output=True, text=True, timeout=60, check=False
    )
    version = parse_java_version(banner.stderr + banner.stdout)
    if version < MIN_JAVA:
        raise EnvironmentProblem(
            f"Spark 4 needs Java {MIN_JAVA} or newer, but {candidate} is Java {version}; "
            "point JAVA_HOME at a newer JDK"
        )
    return candidate, version


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (the caller binds it right away)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class EmbeddedSparkConnect:
    """One local Spark Connect server process and how to stop it."""

    def __init__(
        self,
        *,
        conf_dir: Path | None,
        host: str = "127.0.0.1",
        port: int | None = None,
        master: str = "local[*]",
        extra_conf: Mapping[str, str] | None = None,
        log_path: Path | None = None,
        state_dir: Path | None = None,
        home: Path | None = None,
        python: Path | None = None,
        token: str | None = None,
        class_archive: Path | None = None,
        worker_forks: bool = True,
        jvm_options: tuple[str, ...] = (),
        run_as: tuple[int, int] | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> None:
        """``state_dir``: the JVM's working folder, holding ``warehouse/`` and, unless
        ``log_path`` says otherwise, ``logs/spark-connect.log``. ``home``: a Spark
        distribution (default: the installed pyspark's). ``python``: the interpreter of
        Spark's Python workers, on the driver and the executors (default: this one), run
        through the ``connect-plugin-python`` launcher beside it when there is one, which
        loads pyspark from bytecode; it must import ``connect_plugin``. ``token``: the
        server takes only calls that carry it (Spark's ``spark.connect.authenticate.token``,
        handed over in the JVM's environment, never on its command line). ``class_archive``:
        the folder of the JVM's class-data-sharing archive, mapped when there, written at
        the JVM's clean exit when not (``class_archive``); None: none. ``worker_forks``:
        with the launcher, a fork server beside the JVM starts each Python worker daemon
        already loaded (``connect_plugin.spark_processes.worker_forks``). ``jvm_options``:
        added to the JVM's ``SPARK_SUBMIT_OPTS``. ``run_as``: the (uid, gid) the JVM and the
        fork server run as, with no other group and umask ``077`` (the caller is root);
        ``extra_env``: over this process's environment for both."""
        self.host = host
        self.port = port or free_port(host)
        self.master = master
        self.conf_dir = conf_dir
        self.extra_conf = dict(extra_conf or {})
        self.state_dir = state_dir
        if log_path is None and state_dir is not None:
            log_path = state_dir / LOG_FILE
        self.log_path = log_path
        self.home = home
        interpreter = str(python or sys.executable)
        self.python = launcher(interpreter)
        self.token = token
        self.class_archive = class_archive
        self.jvm_options = jvm_options
        self.run_as = run_as
        self.extra_env = dict(extra_env or {})
        self._forks = (
            WorkerForks(interpreter, run_as, self.extra_env)
            if worker_forks and self.python != interpreter
            else None
        )
        self._archive_use: ArchiveUse | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"sc://{self.host}:{self.port}"

    def spark_home(self) -> Path:
        return self.home or spark_home()

    def command(self) -> list[str]:
        home = self.spark_home()
        conf = {
            "spark.connect.grpc.binding.address": self.host,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.pyspark.python": self.python,
            "spark.pyspark.driver.python": self.python,
        }
        if self.state_dir is not None:
            conf["spark.sql.warehouse.dir"] = str(self.state_dir / WAREHOUSE_DIR)
        defaults = None
        if self.conf_dir is not None and (self.conf_dir / SPARK_DEFAULTS).is_file():
            defaults = self.conf_dir / SPARK_DEFAULTS
        given = _keys_of(defaults) if defaults is not None else set()
        conf.update({key: value for key, value in SERVER_DEFAULTS.items() if key not in given})
        conf.update(self.extra_conf)
        args = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS]
        args += ["--name", "connect-plugin embedded Spark Connect", "--master", self.master]
        if defaults is not None:
            args += ["--properties-file", str(defaults)]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        return args

    def start(self, timeout: float = 180.0) -> str:
        """Start the JVM and return its ``sc://`` address once it answers gRPC."""
        java, _ = find_java()
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(self.spark_home()),
            JAVA_HOME=str(java.resolve().parents[1]),
            PYSPARK_PYTHON=self.python,
            PYSPARK_DRIVER_PYTHON=self.python,
            SPARK_CONNECT_MODE="0",
        )
        env.pop("SPARK_REMOTE", None)
        env.update(self.extra_env)
        if self.token is not None:
            env[TOKEN_VARIABLE] = self.token
        for option in self.jvm_options:
            env[SUBMIT_OPTIONS] = with_option(env, option)
        if self.class_archive is not None:
            self._archive_use = archive_use(self.class_archive, java, self.spark_home())
            if self._archive_use is not None:
                env[SUBMIT_OPTIONS] = with_option(env, self._archive_use.option)
        if self.state_dir is not None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        output = (
            os.fdopen(open_private(self.log_path, os.O_WRONLY | os.O_APPEND), "ab")
            if self.log_path
            else subprocess.DEVNULL
        )
        try:
            if self._forks is not None:
                env[FORKS_VARIABLE] = self._forks.start(output)
            self._process = subprocess.Popen(
                as_user(self.command(), self.run_as),
                env=env,
                cwd=self.state_dir,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **user_options(self.run_as),
            )
        finally:
            if output is not subprocess.DEVNULL:
                output.close()  # type: ignore[union-attr]
        log.info("starting Spark Connect on %s:%d (pid %d)", self.host, self.port, self._process.pid)
        try:
            self._wait_ready(timeout)
            if self._forks is not None and not self._forks.ready():
                log.warning("the Python worker fork server did not start; workers start as usual")
        except BaseException:
            self.stop()
            raise
        return self.address

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        target = f"{self.host}:{self.port}"
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise UpstreamUnavailable(
                    f"the embedded Spark Connect server exited with code "
                    f"{self._process.returncode} before it was ready"
                    + (f"; see {self.log_path}" if self.log_path else "")
                )
            with grpc.insecure_channel(target) as channel:
                try:
                    grpc.channel_ready_future(channel).result(timeout=READY_POLL_S * 4)
                    return
                except grpc.FutureTimeoutError:
                    time.sleep(READY_POLL_S)
        raise UpstreamUnavailable(
            f"the embedded Spark Connect server did not answer on {target} within {timeout:.0f} s"
            + (f"; see {self.log_path}" if self.log_path else "")
        )

    @property
    def client_address(self) -> str:
        """The ``sc://`` address a client of this server uses, with its token if it has one
        (as ``localhost``: pyspark sends a token without TLS only there)."""
        if self.token is None:
            return self.address
        return f"sc://localhost:{self.port}/;token={self.token}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop the JVM and everything it started; SIGKILL if it does not go quietly."""
        try:
            self._stop_jvm(timeout)
        finally:
            if self._forks is not None:
                self._forks.stop()

    def _stop_jvm(self, timeout: float) -> None:
        process, self._process = self._process, None
        archiving, self._archive_use = self._archive_use, None
        if process is None or process.poll() is not None:
            if process is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
            if archiving is not None:
                archiving.finish(stopped_cleanly=False)
            return
        if archiving is not None and archiving.writing is not None:
            timeout = max(timeout, ARCHIVING_STOP_TIMEOUT_S)
        cleanly = False
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout)
            cleanly = process.returncode in (0, 128 + signal.SIGTERM, -signal.SIGTERM)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        except ProcessLookupError:
            process.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        if archiving is not None:
            archiving.finish(stopped_cleanly=cleanly)
        log.info("stopped Spark Connect (pid %d)", process.pid)


def _keys_of(properties: Path) -> set[str]:
    """The keys a ``spark-defaults.conf`` sets (a line is a key, then blanks or ``=``)."""
    keys = set()
    for line in properties.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keys.add(re.split(r"[\s=]", line, maxsplit=1)[0])
    return keys
