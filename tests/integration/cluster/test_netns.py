"""The test hosts themselves: reachable from each other, and gone without a trace after close()."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.cluster.netns import PREFIX, Network, ip, namespace_pids, remove_leftovers

SERVER = """
import socket, sys
with socket.create_server((sys.argv[1], 7000)) as server:
    print("listening", flush=True)
    connection, peer = server.accept()
    connection.sendall(peer[0].encode())
"""
CLIENT = """
import socket, sys, time
for _ in range(200):
    try:
        with socket.create_connection((sys.argv[1], 7000), timeout=5) as sock:
            print(sock.recv(100).decode())
            break
    except ConnectionRefusedError:
        time.sleep(0.05)
"""
FORKS = """
import os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(600)"])
print(os.getpid(), flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


@pytest.mark.usefixtures("namespaces")
def test_hosts_talk_over_the_bridge_from_their_own_addresses(tmp_path: Path) -> None:
    with Network() as network:
        server, client = network.add_host("server"), network.add_host("client")
        env = dict(os.environ)
        listening = server.spawn(
            [sys.executable, "-c", SERVER, server.address],
            env=env,
            log=tmp_path / "server.log",
            cwd=tmp_path,
        )
        answer = client.run([sys.executable, "-c", CLIENT, server.address], env=env, timeout=60)
        assert answer.stdout.strip() == client.address
        assert listening.wait(30) == 0
        routes = ip("-n", client.namespace, "route", "show").stdout
        assert "default" not in routes, "a test host must not reach beyond the bridge"


@pytest.mark.usefixtures("namespaces")
def test_close_kills_every_process_and_removes_every_link(tmp_path: Path) -> None:
    network = Network()
    try:
        host = network.add_host("busy")
        log = tmp_path / "forks.log"
        host.spawn([sys.executable, "-c", FORKS], env=dict(os.environ), log=log, cwd=tmp_path)
        deadline = time.monotonic() + 60
        while len(pids := namespace_pids(host.namespace)) < 3:
            assert time.monotonic() < deadline, f"processes did not start: {log.read_text()}"
            time.sleep(0.05)
    finally:
        network.close()
    assert not [pid for pid in pids if _alive(pid)]
    assert network.leftovers() == []


@pytest.mark.usefixtures("namespaces")
def test_leftovers_of_a_dead_run_are_removed() -> None:
    dead_pid = 2**22 + 1
    name = f"{PREFIX}{dead_pid}-orphan"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        assert name in remove_leftovers()
        assert name not in ip("netns", "list").stdout
    finally:
        ip("netns", "del", name, check=False)
