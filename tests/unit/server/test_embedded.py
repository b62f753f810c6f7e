"""Finding a usable Java for the embedded Spark Connect server."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from connect_plugin.errors import EnvironmentProblem
from connect_plugin.server.embedded import EmbeddedSparkConnect, find_java, parse_java_version


@pytest.mark.parametrize(
    ("banner", "version"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_392"', 8),
        ('openjdk version "21" 2023-09-19', 21),
        ('openjdk version "11.0.2" 2019-01-15', 11),
    ],
)
def test_parse_java_version(banner: str, version: int) -> None:
    assert parse_java_version(banner) == version


def test_missing_java_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentProblem, match="no java was found"):
        find_java({"PATH": str(tmp_path)})


def _fake_java(folder: Path, banner: str) -> Path:
    java = folder / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho '{banner}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return java


def test_old_java_is_refused_with_its_version(tmp_path: Path) -> None:
    _fake_java(tmp_path / "jdk11", 'openjdk version "11.0.2" 2019-01-15')
    with pytest.raises(EnvironmentProblem, match=r"needs Java 17 or newer, but .* is Java 11"):
        find_java({"JAVA_HOME": str(tmp_path / "jdk11"), "PATH": ""})


def test_java_home_wins_over_path(tmp_path: Path) -> None:
    java = _fake_java(tmp_path / "jdk21", 'openjdk version "21" 2023-09-19')
    assert find_java({"JAVA_HOME": str(tmp_path / "jdk21"), "PATH": os.environ["PATH"]}) == (java, 21)


def test_command_binds_loopback_and_uses_this_interpreter(tmp_path: Path) -> None:
    import sys

    (tmp_path / "spark-defaults.conf").write_text("spark.ui.enabled false\n")
    server = EmbeddedSparkConnect(conf_dir=tmp_path, port=12345, extra_conf={"spark.x": "y"})
    command = server.command()
    assert "spark.connect.grpc.binding.address=127.0.0.1" in command
    assert "spark.connect.grpc.binding.port=12345" in command
    launcher = Path(sys.executable).with_name("connect-plugin-python")
    assert f"spark.pyspark.python={launcher}" in command
    assert f"spark.pyspark.driver.python={launcher}" in command
    assert command[command.index("--properties-file") + 1] == str(tmp_path / "spark-defaults.conf")
    assert "spark.x=y" in command


def test_a_state_folder_holds_the_warehouse_and_the_log(tmp_path: Path) -> None:
    state = tmp_path / "state"
    workers = tmp_path / "other-venv" / "bin" / "python"
    server = EmbeddedSparkConnect(conf_dir=None, port=12345, state_dir=state, python=workers)
    command = server.command()
    assert f"spark.sql.warehouse.dir={state / 'warehouse'}" in command
    assert f"spark.pyspark.python={workers}" in command
    assert server.log_path == state / "logs" / "spark-connect.log"


def test_workers_run_through_the_launcher_beside_the_interpreter(tmp_path: Path) -> None:
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    beside = python.with_name("connect-plugin-python")
    beside.write_text("#!/bin/sh\n")
    beside.chmod(0o755)
    command = EmbeddedSparkConnect(conf_dir=None, port=12345, python=python).command()
    assert f"spark.pyspark.python={beside}" in command
    assert f"spark.pyspark.driver.python={beside}" in command


def test_explicit_settings_win_over_the_state_folder(tmp_path: Path) -> None:
    server = EmbeddedSparkConnect(
        conf_dir=None,
        port=12345,
        state_dir=tmp_path / "state",
        extra_conf={"spark.sql.warehouse.dir": str(tmp_path / "wh")},
        log_path=tmp_path / "spark.log",
    )
    assert f"spark.sql.warehouse.dir={tmp_path / 'wh'}" in server.command()
    assert server.log_path == tmp_path / "spark.log"


PUSHDOWN = "spark.sql.json.filterPushdown.enabled"


@pytest.mark.parametrize(
    ("defaults", "extra", "passed"),
    [
        (None, {}, "false"),
        ("spark.ui.enabled false\n", {}, "false"),
        (f"# {PUSHDOWN} true\n", {}, "false"),
        (f"{PUSHDOWN}  true\n", {}, None),
        (f"{PUSHDOWN}=true\n", {}, None),
        (None, {PUSHDOWN: "true"}, "true"),
    ],
)
def test_json_filter_pushdown_is_off_unless_the_defaults_or_the_caller_set_it(
    tmp_path: Path, defaults: str | None, extra: dict[str, str], passed: str | None
) -> None:
    """Spark's json reader fails a pushed filter comparing a struct column with a struct."""
    if defaults is not None:
        (tmp_path / "spark-defaults.conf").write_text(defaults)
    command = EmbeddedSparkConnect(conf_dir=tmp_path, port=12345, extra_conf=extra).command()
    given = [arg.split("=", 1)[1] for arg in command if arg.startswith(f"{PUSHDOWN}=")]
    assert given == ([] if passed is None else [passed])


def test_a_token_goes_to_the_server_by_its_environment_and_to_clients_by_the_address() -> None:
    server = EmbeddedSparkConnect(conf_dir=None, port=12345, token="s3cret-token")
    assert not any("s3cret-token" in part for part in server.command())
    assert server.address == "sc://127.0.0.1:12345"
    assert server.client_address == "sc://localhost:12345/;token=s3cret-token"
    assert EmbeddedSparkConnect(conf_dir=None, port=12345).client_address == server.address


def test_the_stack_protects_only_a_loopback_embedded_server() -> None:
    from connect_plugin.server.stack import _embedded_token

    first, second = _embedded_token("127.0.0.1"), _embedded_token("127.0.0.1")
    assert first is not None
    assert second is not None
    assert len(first) >= 32
    assert first != second
    assert _embedded_token("0.0.0.0") is None
