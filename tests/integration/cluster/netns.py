"""Hosts on one machine: Linux network namespaces on a bridge, made and removed by the tests.

Each host is a network namespace with its own loopback and one veth into a
bridge, with an address on a private /24. The machine's own namespace gets no
address on the bridge, so nothing reaches or leaves the hosts but what they
send each other, and two runs at once never clash on routes. Namespaces
share the file system, so one folder of this machine is the same shared
folder at the same path on every host.

Names carry a prefix and the pid of the process that made them; leftovers of
a run that died (its pid gone) are removed before a new network is made.
Everything is undone in ``close()``, whatever state a failed test left.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import string
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import ClassVar

PREFIX = "cpn"
SUBNET = "10.214.14"
"""First three octets of the hosts' /24; hosts take .2 upwards."""
PREFIX_LENGTH = 24
FIRST_HOST = 2
IP_TIMEOUT_S = 30.0
STOP_GRACE_S = 10.0
KILL_WAIT_S = 10.0


class NamespacesUnavailable(Exception):
    """This machine cannot make network namespaces (not root, no iproute2, no kernel support)."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", *args], capture_output=True, text=True, timeout=IP_TIMEOUT_S, check=check
    )


def unavailable_reason() -> str | None:
    """Why namespaces cannot be made here, or None when they can."""
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    if os.geteuid() != 0:
        return "making network namespaces needs root"
    probe = f"{PREFIX}{os.getpid()}probe"
    made = ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    ip("netns", "del", probe, check=False)
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner_pid(name: str) -> int | None:
    digits = name.removeprefix(PREFIX)
    digits = digits[: len(digits) - len(digits.lstrip("0123456789"))]
    return int(digits) if name.startswith(PREFIX) and digits else None


def remove_leftovers() -> list[str]:
    """Delete namespaces and links of earlier runs whose process is gone; what was removed."""
    removed = []
    namespaces = [line.split()[0] for line in ip("netns", "list").stdout.splitlines() if line]
    links = [
        line.split(":")[1].strip().split("@")[0]
        for line in ip("-o", "link", "show").stdout.splitlines()
        if line.count(":") >= 2
    ]
    for name in namespaces + links:
        pid = _owner_pid(name)
        if pid is None or pid == os.getpid() or _pid_alive(pid):
            continue
        if name in namespaces:
            _kill_namespace_processes(name)
            ip("netns", "del", name, check=False)
        else:
            ip("link", "del", name, check=False)
        removed.append(name)
    return removed


def namespace_pids(namespace: str) -> list[int]:
    listed = ip("netns", "pids", namespace, check=False).stdout.split()
    return [int(pid) for pid in listed if pid.isdigit()]


def _kill_namespace_processes(namespace: str) -> None:
    for pid in namespace_pids(namespace):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_WAIT_S
    while namespace_pids(namespace) and time.monotonic() < deadline:
        time.sleep(0.05)


@dataclass
class Host:
    """One namespace: a name, an address on the bridge, and the processes started in it."""

    name: str
    namespace: str
    address: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def command(self, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.namespace, *argv]

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        log: Path,
        cwd: Path,
        piped: bool = False,
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` here, in a process group of its own, its stderr appended to ``log``.

        Its stdout goes to ``log`` too, unless ``piped``: then stdin and stdout are pipes.
        """
        cwd.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as output:
            process = subprocess.Popen(
                self.command(argv),
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.PIPE if piped else subprocess.DEVNULL,
                stdout=subprocess.PIPE if piped else output,
                stderr=output,
                start_new_session=True,
            )
        self.processes.append(process)
        return process

    def run(
        self, argv: Sequence[str], *, env: Mapping[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` here to completion."""
        return subprocess.run(
            self.command(argv),
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def stop_all(self) -> None:
        """SIGTERM every process group started here, SIGKILL what is left, then any straggler."""
        for process in self.processes:
            signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(max(0.0, deadline - time.monotonic()))
        for process in self.processes:
            kill_group(process)
        self.processes.clear()
        _kill_namespace_processes(self.namespace)


def signal_group(process: subprocess.Popen[bytes], signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process and everything in its group, and reap it."""
    signal_group(process, signal.SIGKILL)
    process.wait(KILL_WAIT_S)


class Network:
    """A bridge and the hosts on it; ``close()`` removes every trace."""

    _made: ClassVar[int] = 0

    def __init__(self, prefix: str = PREFIX) -> None:
        # A letter per network of this process keeps names unique and within 15 bytes.
        self.tag = f"{prefix}{os.getpid()}{string.ascii_lowercase[Network._made % 26]}"
        Network._made += 1
        self.bridge = f"{self.tag}br"
        self.hosts: dict[str, Host] = {}
        self._veths: list[str] = []
        remove_leftovers()
        ip("link", "add", self.bridge, "type", "bridge")
        ip("link", "set", self.bridge, "up")

    def add_host(self, name: str) -> Host:
        index = len(self.hosts)
        namespace = f"{self.tag}-{name}"
        veth = f"{self.tag}v{index}"
        address = f"{SUBNET}.{FIRST_HOST + index}"
        ip("netns", "add", namespace)
        host = Host(name, namespace, address)
        self.hosts[name] = host
        ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", namespace)
        self._veths.append(veth)
        ip("link", "set", veth, "master", self.bridge, "up")
        ip("-n", namespace, "addr", "add", f"{address}/{PREFIX_LENGTH}", "dev", "eth0")
        ip("-n", namespace, "link", "set", "eth0", "up")
        ip("-n", namespace, "link", "set", "lo", "up")
        return host

    def close(self) -> None:
        for host in self.hosts.values():
            host.stop_all()
        for veth in self._veths:
            ip("link", "del", veth, check=False)
        for host in self.hosts.values():
            ip("netns", "del", host.namespace, check=False)
        ip("link", "del", self.bridge, check=False)
        self.hosts.clear()
        self._veths.clear()

    def leftovers(self) -> list[str]:
        """Namespaces and links of this network still present (empty after ``close()``)."""
        names = ip("netns", "list").stdout + ip("-o", "link", "show").stdout
        words = {word.split("@")[0] for word in names.replace(":", " ").split()}
        return sorted(word for word in words if word.startswith(self.tag))

    def __enter__(self) -> Network:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
