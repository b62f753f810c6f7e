"""Engines as operating-system users of their own: isolation that holds against users' code.

A gateway run as root starts alice's and bob's engines as two users this
test makes (and removes); code alice runs in Spark (a Python UDF, Spark's own
readers, ``reflect``) then cannot read bob's temporary table files, bob's
engine token, the tokens file or the registry, and cannot use bob's engine
without bob's engine token. Needs root and ``useradd``; skips otherwise.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql.connect._typing import UserDefinedFunctionLike
from pyspark.sql.functions import col, udf
from pyspark.sql.types import StringType

from connect_plugin import scan
from connect_plugin.errors import ConfigError
from connect_plugin.server.engine_process import LocalEngine
from connect_plugin.server.gateway import Gateway
from connect_plugin.server.sessions.workspace import SCANS_DIR
from tests.integration.engines.support import TOKENS, engines_gateway, session_of

TOKEN_VARIABLE = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
GONE_S = 10.0
"""How long the processes of a stopped engine may take to be gone from ``/proc``."""
ACL_XATTR = "system.posix_acl_access"
_ACL_UNDEFINED = 0xFFFFFFFF

if os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("userdel") is None:
    pytest.skip(
        "engines as operating-system users need a test run as root with useradd and userdel",
        allow_module_level=True,
    )


def _unreachable_folders(path: Path) -> list[Path]:
    """The folders above ``path`` (links resolved) that other users cannot pass through."""
    found = []
    for folder in Path(os.path.realpath(path)).parents:
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            found.append(folder)
    return found


def _acl(mode: int, uids: list[int]) -> bytes:
    """A POSIX access ACL (the kernel's xattr form) of ``mode`` plus search for ``uids``."""
    group = (mode >> 3) & 7
    entries = [(0x01, (mode >> 6) & 7, _ACL_UNDEFINED)]
    entries += [(0x02, 1, uid) for uid in sorted(uids)]
    entries += [(0x04, group, _ACL_UNDEFINED), (0x10, group | 1, _ACL_UNDEFINED)]
    entries += [(0x20, mode & 7, _ACL_UNDEFINED)]
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


@contextmanager
def _passable_for(folders: list[Path], uids: list[int]) -> Iterator[None]:
    """Let ``uids`` pass through ``folders`` (an interpreter installed under ``/root``) while
    the test runs: an ACL entry each, removed after, the modes restored."""
    changed: list[tuple[Path, int]] = []
    try:
        for folder in folders:
            mode = stat.S_IMODE(os.stat(folder).st_mode)
            if os.listxattr(folder).count(ACL_XATTR):
                pytest.skip(f"{folder} has an ACL already; the test leaves it alone")
            try:
                os.setxattr(folder, ACL_XATTR, _acl(mode, uids))
            except OSError as exc:
                pytest.skip(f"the interpreter is under {folder}, which other users cannot "
                            f"pass through, and its file system takes no ACL ({exc.strerror})")
            changed.append((folder, mode))
        yield
    finally:
        for folder, mode in changed:
            os.removexattr(folder, ACL_XATTR)
            os.chmod(folder, mode)


def _processes_of(uid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    found.add(int(entry.name))
            except OSError:
                continue
    return found


def _owner(entry: os.DirEntry[str]) -> int | None:
    try:
        return entry.stat(follow_symlinks=False).st_uid
    except OSError:
        return None


@contextmanager
def _os_users(count: int) -> Iterator[list[pwd.struct_passwd]]:
    """``count`` system users made for the test, removed after; none may keep a process."""
    names = [f"cpe{secrets.token_hex(4)}{index}" for index in range(count)]
    made: list[pwd.struct_passwd] = []
    try:
        for name in names:
            subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                check=True,
                capture_output=True,
            )
            made.append(pwd.getpwnam(name))
        folders = _unreachable_folders(Path(sys.executable))
        with _passable_for(folders, [user.pw_uid for user in made]):
            yield made
    finally:
        left = {user.pw_name: _processes_of(user.pw_uid) for user in made}
        deadline = time.monotonic() + GONE_S
        while any(left.values()) and time.monotonic() < deadline:
            time.sleep(0.2)
            left = {user.pw_name: _processes_of(user.pw_uid) for user in made}
        uids = {user.pw_uid for user in made}
        in_tmp = [entry.path for entry in os.scandir("/tmp") if _owner(entry) in uids]
        for user in made:
            for pid in _processes_of(user.pw_uid):
                os.kill(pid, 9)
            subprocess.run(["userdel", user.pw_name], check=False, capture_output=True)
        assert not any(left.values()), f"processes left by the engine users: {left}"
        for path in in_tmp:
            shutil.rmtree(path, ignore_errors=True)
        assert in_tmp == [], f"left in /tmp by the engine users: {in_tmp}"


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder the engine users may pass through (pytest's own is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="connect-plugin-os-users-"))
    try:
        folder.chmod(0o711)
        (folder / "state").mkdir(mode=0o711)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def os_users_gateway(folder: Path, os_users: dict[str, str], **settings: object) -> Iterator[Gateway]:
    users = tuple(f"{owner}={name}" for owner, name in os_users.items())
    with engines_gateway(folder, engine_os_users=users, **settings) as gateway:
        yield gateway


def _engine(gateway: Gateway, owner: str) -> LocalEngine:
    assert gateway.engines is not None
    process = gateway.engines._running[owner].process
    assert process is not None
    return process


def _uid_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("\nUid:", 1)[1].split()[0])


def _worker_functions() -> tuple[UserDefinedFunctionLike, UserDefinedFunctionLike]:
    """Python UDFs (defined here, so that they travel by value): what opening a path gives,
    and the uid, gid and groups the worker runs with."""

    def attempt(path: str) -> str:
        try:
            with open(path, "rb") as found:
                found.read(64)
        except PermissionError:
            return "denied"
        except OSError as exc:
            return type(exc).__name__
        return "read"

    def who(_: int) -> str:
        import os as worker_os

        return f"{worker_os.getuid()}:{worker_os.getgid()}:{worker_os.getgroups()}"

    return udf(attempt, StringType(), useArrow=False), udf(who, StringType(), useArrow=False)


def _reads(spark: SparkSession, paths: list[str]) -> dict[str, str]:
    attempt, _ = _worker_functions()
    rows = spark.createDataFrame([(p,) for p in paths], "path string").select(
        "path", attempt(col("path")).alias("got")
    )
    return {row.path: row.got for row in rows.collect()}


def _refused(address: str) -> str:
    """The error a direct client of ``address`` gets for one query ("" when it got rows)."""
    spark = SparkSession.builder.remote(address).create()
    try:
        spark.range(1).collect()
    except PySparkException as exc:
        return str(exc)
    finally:
        spark.client.close()
    return ""


def test_code_in_one_users_engine_cannot_reach_another_users_files_tokens_or_engine(
    base: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _os_users(2) as (alices_user, bobs_user), os_users_gateway(
        base, {"alice": alices_user.pw_name, "bob": bobs_user.pw_name}, worker_forks=True
    ) as gateway, session_of(gateway, "alice") as alice, session_of(gateway, "bob") as bob:
        bob.sql("CREATE TEMPORARY TABLE secret AS SELECT 'bobs' AS what, id FROM range(5)")
        assert bob.table("secret").count() == 5
        alice.sql("CREATE TEMPORARY TABLE mine AS SELECT id FROM range(3)")
        # A scan reads as alice's user and keeps its plan in alice's session folder.
        shared = base / "shared"
        shared.mkdir(mode=0o755)
        (shared / "rows.json").write_text("".join(f'{{"id": {i}}}\n' for i in range(4)))
        (shared / "rows.json").chmod(0o644)
        assert scan(alice, str(shared / "rows.json"), format="json").count() == 4
        (plan,) = (base / "workspace" / alice.client._session_id / SCANS_DIR).iterdir()
        assert plan.stat().st_uid == alices_user.pw_uid
        bobs_engine, alices_engine = _engine(gateway, "bob"), _engine(gateway, "alice")
        assert bobs_engine.pid is not None
        assert alices_engine.pid is not None
        assert _uid_of(bobs_engine.pid) == bobs_user.pw_uid
        assert _uid_of(alices_engine.pid) == alices_user.pw_uid

        # Each engine's folders are its user's own; the gateway's files are root's.
        workspace = base / "workspace"
        bobs_session = workspace / bob.client._session_id
        (bobs_table,) = [p for p in bobs_session.iterdir() if p.is_dir()]
        data_file = next(p for p in bobs_table.rglob("*") if p.is_file() and p.name.startswith("part-"))
        for folder, owner in (
            (bobs_session, bobs_user),
            (bobs_engine.folder, bobs_user),
            (bobs_engine.folder / "tmp", bobs_user),
        ):
            found = os.stat(folder)
            assert (found.st_uid, stat.S_IMODE(found.st_mode)) == (owner.pw_uid, 0o700), folder
        assert stat.S_IMODE(os.stat(workspace).st_mode) == 0o711
        registry = workspace / ".connect-plugin" / "registry.sqlite3"
        assert registry.is_file()
        assert os.stat(registry.parent).st_uid == 0

        # Alice's Python UDF runs as alice's user, with its group alone.
        _, who_udf = _worker_functions()
        who = alice.range(1).select(who_udf(col("id"))).collect()[0][0]
        assert who == f"{alices_user.pw_uid}:{alices_user.pw_gid}:[]"
        assert not [r for r in caplog.records if "fork server did not start" in r.message]
        bobs_token = bobs_engine.url.token
        alices_token = alices_engine.url.token
        assert bobs_token
        assert alices_token
        assert bobs_token != alices_token
        bobs_environ = f"/proc/{bobs_engine.pid}/environ"
        got = _reads(
            alice,
            [
                str(data_file),
                str(bobs_table),
                bobs_environ,
                str(base / "tokens"),
                str(registry),
                f"/proc/{alices_engine.pid}/environ",
                "/etc/hostname",
            ],
        )
        assert got[str(data_file)] == "denied"
        assert got[bobs_environ] == "denied"
        assert got[str(base / "tokens")] == "denied"
        assert got[str(registry)] == "denied"
        # The same UDF reads what alice's own user may: the checks above can fail.
        assert got[f"/proc/{alices_engine.pid}/environ"] == "read"
        assert got["/etc/hostname"] == "read"

        # Java in alice's engine sees alice's token, never bob's; Spark's readers, run as
        # alice's user, cannot read bob's files or the gateway's.
        seen = alice.sql(f"SELECT reflect('java.lang.System', 'getenv', '{TOKEN_VARIABLE}')")
        assert seen.collect()[0][0] == alices_token
        for path in (str(bobs_table), str(base / "tokens"), str(registry)):
            with pytest.raises(PySparkException, match=r"PATH_NOT_FOUND|Permission denied"):
                alice.read.text(path).collect()

        # Bob's engine port takes no call without bob's engine token, and its Spark RPC none
        # without the secret Spark drew at its start.
        engine_log = base / "state" / "engines" / "logs" / f"{bobs_engine.folder.name}.log"
        assert "SecurityManager: authentication enabled" in engine_log.read_text()
        port = bobs_engine.url.port
        for address in (
            f"sc://localhost:{port}/;token={alices_token}",
            f"sc://localhost:{port}/;token={TOKENS['alice']}",
            f"sc://127.0.0.1:{port}",
        ):
            assert "UNAUTHENTICATED" in _refused(address) or "authenticat" in _refused(address).lower()

        # A clone's tables are bob's user's too, readable and written by bob's engine.
        clone = bob.cloneSession()
        try:
            assert clone.table("secret").count() == 5
            clone.sql("INSERT INTO secret SELECT 'more', 9")
            assert clone.table("secret").count() == 6
            clones_folder = workspace / clone.client._session_id
            assert os.stat(clones_folder).st_uid == bobs_user.pw_uid
        finally:
            clone.stop()
        assert bob.table("secret").count() == 5
        assert alice.table("mine").count() == 3
        alice.client.release_session()
        bob.client.release_session()


def test_an_owner_without_an_os_user_is_refused_and_an_unknown_user_stops_the_start(
    base: Path,
) -> None:
    with _os_users(1) as (alices_user,):
        with os_users_gateway(base, {"alice": alices_user.pw_name}) as gateway, session_of(
            gateway, "carol"
        ) as carol, pytest.raises(PySparkException) as refused:
            carol.range(1).collect()
        text = str(refused.value)
        assert "CONNECT_PLUGIN.NO_ENGINE" in text
        assert "no operating-system user" in text
        assert "carol=<user>" in text
        missing = f"cpe{secrets.token_hex(6)}"
        with (
            pytest.raises(ConfigError, match=f"{missing}.*does not exist.*useradd"),
            os_users_gateway(base, {"alice": missing}),
        ):
            pass
