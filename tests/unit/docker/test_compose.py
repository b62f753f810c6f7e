"""The compose files: roles the entrypoint knows, healthchecks, one published port, one workspace.

Each check runs on two readings of each file: PyYAML's (anchors and merge
keys resolved) and the model ``docker compose config`` prints, which is how
the engine would read it (interpolation, defaults, long syntax), so a file
that only looks right to us fails too.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from connect_plugin.config import load_config
from tests.image import (
    CLUSTER_COMPOSE,
    DOCKERFILE,
    ENGINES_COMPOSE,
    LOCAL_COMPOSE,
    load_entrypoint,
)
from tests.unit.docker.image_checks import as_dict, health_command, tool

entrypoint: Any = load_entrypoint()
COMPOSE = tool("docker-compose")
MAX_LOCAL_START_S = 60


def _yaml(path: Path) -> dict[str, Any]:
    model: dict[str, Any] = yaml.safe_load(path.read_text())
    return model


def _compose_config(path: Path) -> dict[str, Any]:
    if COMPOSE is None:
        pytest.skip("docker-compose is not installed (pip install -e '.[dev]')")
    result = subprocess.run(
        [COMPOSE, "-f", str(path), "config", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"docker compose config rejects {path.name}: {result.stderr}"
    model: dict[str, Any] = json.loads(result.stdout)
    return model


READINGS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "pyyaml": _yaml,
    "compose-config": _compose_config,
}


@pytest.fixture(params=list(READINGS))
def read(request: pytest.FixtureRequest) -> Callable[[Path], dict[str, Any]]:
    reader: Callable[[Path], dict[str, Any]] = READINGS[request.param]
    return reader


def _env(service: dict[str, Any]) -> dict[str, str]:
    """The service's settings as the entrypoint sees them (image defaults filled in)."""
    env = {key: str(value) for key, value in as_dict(service.get("environment")).items()}
    return entrypoint.settings(env, entrypoint.role_of(env))  # type: ignore[no-any-return]


def _role(service: dict[str, Any]) -> str:
    role = as_dict(service.get("environment")).get("CONNECT_PLUGIN_ROLE")
    assert role in entrypoint.ROLES, f"role {role!r} is not one the entrypoint has"
    return str(role)


def _container_ports(service: dict[str, Any]) -> list[int]:
    """Container ports a service publishes, short (``"15002:15002"``) or long syntax."""
    ports = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            ports.append(int(port["target"]))
        else:
            ports.append(int(str(port).rsplit(":", 1)[-1].split("/")[0]))
    return ports


def _mounts(service: dict[str, Any]) -> dict[str, str]:
    """Volume name -> path in the container."""
    mounts = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            mounts[volume["source"]] = volume["target"]
        else:
            source, target = str(volume).split(":")[:2]
            mounts[source] = target
    return mounts


def _services_by_role(model: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    return {_role(service): (name, service) for name, service in model["services"].items()}


def _duration_s(value: str | int | float) -> float:
    if isinstance(value, int | float):
        return float(value) / 1e9 if value > 1e6 else float(value)
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(
        float(number) * units[unit] for number, unit in re.findall(r"([\d.]+)(ms|h|m|s)", value)
    )


@pytest.mark.parametrize(
    "path", [CLUSTER_COMPOSE, LOCAL_COMPOSE, ENGINES_COMPOSE], ids=lambda p: p.name
)
def test_every_service_has_a_role_and_the_images_healthcheck(
    read: Callable[[Path], dict[str, Any]], path: Path
) -> None:
    for name, service in read(path)["services"].items():
        _role(service)
        check = service.get("healthcheck")
        assert check, f"service {name} has no healthcheck"
        assert not check.get("disable"), f"service {name} turns the healthcheck off"
        assert check["test"] == health_command(), f"service {name} checks something else"


def test_the_cluster_has_each_role_and_two_workers(read: Callable[[Path], dict[str, Any]]) -> None:
    by_role = _services_by_role(read(CLUSTER_COMPOSE))
    assert set(by_role) == {"master", "worker", "connect", "gateway"}
    _, worker = by_role["worker"]
    assert int(worker.get("deploy", {}).get("replicas", 1)) >= 2


def test_only_the_gateway_is_published(read: Callable[[Path], dict[str, Any]]) -> None:
    by_role = _services_by_role(read(CLUSTER_COMPOSE))
    published = {role: _container_ports(service) for role, (_, service) in by_role.items()}
    _, gateway = by_role["gateway"]
    assert published == {
        "master": [],
        "worker": [],
        "connect": [],
        "gateway": [int(_env(gateway)["CONNECT_PLUGIN_PORT"])],
    }


def test_one_workspace_at_the_same_path_wherever_spark_or_the_gateway_writes(
    read: Callable[[Path], dict[str, Any]],
) -> None:
    model = read(CLUSTER_COMPOSE)
    by_role = _services_by_role(model)
    _, gateway = by_role["gateway"]
    workspace = _env(gateway)["CONNECT_PLUGIN_WORKSPACE"]
    for role in ("worker", "connect", "gateway"):
        name, service = by_role[role]
        mounts = _mounts(service)
        assert list(mounts.values()) == [workspace], f"{name} mounts {mounts}"
        assert set(mounts) <= set(model["volumes"]), f"{name} mounts an undeclared volume"
    assert len({next(iter(_mounts(by_role[r][1]))) for r in ("worker", "connect", "gateway")}) == 1


def test_addresses_name_the_services_that_serve_them(
    read: Callable[[Path], dict[str, Any]],
) -> None:
    by_role = _services_by_role(read(CLUSTER_COMPOSE))
    master_name, master = by_role["master"]
    connect_name, connect = by_role["connect"]
    master_url = (
        f"spark://{master.get('hostname', master_name)}:{_env(master)['SPARK_MASTER_PORT']}"
    )
    for role in ("worker", "connect"):
        assert _env(by_role[role][1])["SPARK_MASTER_URL"] == master_url
    upstream = f"sc://{connect.get('hostname', connect_name)}:{_env(connect)['SPARK_CONNECT_PORT']}"
    assert _env(by_role["gateway"][1])["CONNECT_PLUGIN_UPSTREAM"] == upstream


def test_each_role_waits_for_what_it_needs_to_be_healthy(
    read: Callable[[Path], dict[str, Any]],
) -> None:
    by_role = _services_by_role(read(CLUSTER_COMPOSE))
    needs = {"master": set(), "worker": {"master"}, "connect": {"master", "worker"}}
    needs["gateway"] = {"connect"}
    for role, wanted in needs.items():
        name, service = by_role[role]
        depends = service.get("depends_on", {})
        assert {by_role[r][0] for r in wanted} == set(depends), f"{name} depends on {depends}"
        for other, condition in depends.items():
            assert condition["condition"] == "service_healthy", f"{name} -> {other}"


def test_connect_and_the_gateway_share_the_spark_token_settings() -> None:
    model = _yaml(CLUSTER_COMPOSE)
    auth = model["x-spark-connect-auth"]
    by_role = _services_by_role(model)
    for role in ("connect", "gateway"):
        env = as_dict(by_role[role][1]["environment"])
        assert {key: env.get(key) for key in auth} == auth


def test_the_single_container_serves_one_port_within_a_minute(
    read: Callable[[Path], dict[str, Any]],
) -> None:
    services = read(LOCAL_COMPOSE)["services"]
    ((name, service),) = services.items()
    assert _role(service) == "local"
    assert _container_ports(service) == [int(_env(service)["CONNECT_PLUGIN_PORT"])]
    check = service["healthcheck"]
    assert _duration_s(check["start_period"]) <= MAX_LOCAL_START_S, name


def test_the_gateways_metrics_are_on_the_compose_network_only(
    read: Callable[[Path], dict[str, Any]],
) -> None:
    for path, service in ((CLUSTER_COMPOSE, "gateway"), (LOCAL_COMPOSE, "spark")):
        found = read(path)["services"][service]
        assert str(found["environment"]["CONNECT_PLUGIN_METRICS_PORT"]) == "9464"
        assert [str(port) for port in found["expose"]] == ["9464"]
        assert all("9464" not in str(port) for port in found["ports"])


def test_the_single_container_is_local_to_its_host_and_sees_the_tests_files() -> None:
    """As written (``docker compose config`` resolves the variables)."""
    (service,) = yaml.safe_load(LOCAL_COMPOSE.read_text())["services"].values()
    (published,) = service["ports"]
    assert str(published).startswith("${CONNECT_PLUGIN_PUBLISHED_ADDRESS:-127.0.0.1}:")
    (mount,) = service["volumes"]
    host, container = str(mount).split("}:", 1)
    assert host + "}" == container == "${CONNECT_PLUGIN_DATA_DIR:-/tmp/connect-plugin-data}"


def test_the_engines_example_gives_each_user_a_spark_and_its_tokens_as_a_private_secret(
    read: Callable[[Path], dict[str, Any]], tmp_path: Path
) -> None:
    model = read(ENGINES_COMPOSE)
    ((name, service),) = model["services"].items()
    env = _env(service)
    assert _role(service) == "local"
    assert env["CONNECT_PLUGIN_SHARE_LEVEL"] == "user"
    assert _container_ports(service) == [int(env["CONNECT_PLUGIN_PORT"])]
    assert _duration_s(service["healthcheck"]["start_period"]) <= MAX_LOCAL_START_S, name
    (secret,) = service["secrets"]
    assert secret["target"] == env["CONNECT_PLUGIN_AUTH_TOKENS_FILE"]
    assert model["secrets"][secret["source"]]["environment"] == "CONNECT_PLUGIN_TOKENS"
    user = re.search(r"^USER (\d+):(\d+)$", DOCKERFILE.read_text(), re.MULTILINE)
    assert user is not None
    assert (str(secret["uid"]), str(secret["gid"])) == user.groups()
    assert int(str(secret["mode"]).removeprefix("0o"), 8) == 0o400
    config = load_config({"local": True, "conf_dir": tmp_path}, env)
    assert config.share_level == "user"
    assert config.max_engines >= 1
