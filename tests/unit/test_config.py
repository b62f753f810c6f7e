"""Configuration: arguments over environment over the TOML file over defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_plugin.config import Config, load_config
from connect_plugin.errors import ConfigError
from connect_plugin.server.engine_users import engine_users


def _conf_dir(tmp_path: Path, body: str) -> Path:
    (tmp_path / "connect-plugin.toml").write_text(body)
    return tmp_path


def test_precedence_arguments_env_file_default(tmp_path: Path) -> None:
    conf_dir = _conf_dir(tmp_path, '[gateway]\nport = 1111\nhost = "0.0.0.0"\nlog_level = "DEBUG"\n')
    env = {"CONNECT_PLUGIN_PORT": "2222", "CONNECT_PLUGIN_HOST": "127.0.0.2"}
    config = load_config({"port": 3333, "conf_dir": conf_dir}, env)
    assert config.port == 3333
    assert config.host == "127.0.0.2"
    assert config.log_level == "DEBUG"
    assert config.temp_table_format == Config().temp_table_format


def test_env_values_are_typed(tmp_path: Path) -> None:
    env = {
        "CONNECT_PLUGIN_LOCAL": "yes",
        "CONNECT_PLUGIN_WORKSPACE": str(tmp_path / "ws"),
        "CONNECT_PLUGIN_FORWARD_EXTENSIONS": "delta.connect., io.x.",
        "CONNECT_PLUGIN_SHUTDOWN_GRACE_S": "0.5",
    }
    config = load_config({"conf_dir": tmp_path}, env)
    assert config.local is True
    assert config.workspace == tmp_path / "ws"
    assert config.forward_extensions == ("delta.connect.", "io.x.")
    assert config.shutdown_grace_s == 0.5


def test_unknown_file_setting_is_named(tmp_path: Path) -> None:
    conf_dir = _conf_dir(tmp_path, "[gateway]\nprot = 1\n")
    with pytest.raises(ConfigError, match=r"unknown settings in \[gateway\]: prot"):
        load_config({"conf_dir": conf_dir}, {})


def test_bad_env_value_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="setting port: cannot read 'abc'"):
        load_config({"conf_dir": tmp_path}, {"CONNECT_PLUGIN_PORT": "abc"})


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"port": 70000}, "outside 0..65535"),
        ({"upstream": "http://x:1"}, "must be a Spark Connect URL"),
        ({"local": True, "upstream": "sc://x:1"}, "either local"),
        ({"share_level": "tenant"}, "share_level 'tenant' is not one of server, user, group"),
        ({"share_level": "user", "local": True}, "share_level user needs auth_tokens_file"),
        (
            {"share_level": "group", "auth_tokens_file": "t", "upstream": "sc://x:1"},
            "instead of upstream",
        ),
        ({"share_level": "user", "auth_tokens_file": "t"}, "share_level user needs engines"),
        ({"engines": ("alice=sc://x:1",)}, "set share_level to user or group"),
        (
            {"share_level": "user", "auth_tokens_file": "t", "engines": ("sc://x:1/;token=s3cret",)},
            "engines entry 'sc://x:1/': write owner=sc://host:port",
        ),
        ({"max_engines": -1, "local": True}, "max_engines -1 is too small"),
        ({"engine_cores": 0, "local": True}, "engine_cores 0 is too small"),
    ],
)
def test_invalid_settings_are_refused(arguments: dict[str, object], message: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config({**arguments, "conf_dir": tmp_path}, {})


def test_the_retired_temp_workspace_setting_is_refused_naming_session(tmp_path: Path) -> None:
    conf_dir = _conf_dir(tmp_path, '[gateway]\ntemp_workspace_name = "tmp"\n')
    with pytest.raises(ConfigError, match=r"temp_workspace_name is retired.*session\.<name>"):
        load_config({"conf_dir": conf_dir}, {})


def test_upstream_target_defaults_the_spark_port() -> None:
    assert Config(upstream="sc://spark").upstream_target == "spark:15002"
    assert Config(upstream="sc://spark:99/;user_id=a").upstream_target == "spark:99"


def test_a_checkout_reads_the_default_settings_from_its_server_conf() -> None:
    """The wheel maps server_conf/ into the package (tests/integration/installs checks
    that); a checkout has it at the top level, beside the package."""
    import connect_plugin

    conf_dir = Config().conf_dir
    assert conf_dir is not None
    assert conf_dir == Path(connect_plugin.__file__).parents[1] / "server_conf"
    assert (conf_dir / "connect-plugin.toml").is_file()
    assert (conf_dir / "spark-defaults.conf").is_file()


def test_the_state_folder_follows_xdg_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert Config().state_dir == tmp_path / "xdg" / "connect-plugin"
    assert Config().workspace == tmp_path / "xdg" / "connect-plugin" / "workspace"
    config = load_config({"conf_dir": tmp_path}, {"CONNECT_PLUGIN_STATE_DIR": str(tmp_path / "s")})
    assert config.state_dir == tmp_path / "s"


def test_static_engines_are_read_by_owner_and_their_tokens_never_shown(tmp_path: Path) -> None:
    config = load_config(
        {"conf_dir": tmp_path},
        {
            "CONNECT_PLUGIN_SHARE_LEVEL": "group",
            "CONNECT_PLUGIN_AUTH_TOKENS_FILE": str(tmp_path / "tokens"),
            "CONNECT_PLUGIN_ENGINES": "analysts=sc://spark-a:15002/;token=s3cret-token,"
            "ops=sc://spark-b:15003",
        },
    )
    engines = config.static_engines
    assert {owner: url.target for owner, url in engines.items()} == {
        "analysts": "spark-a:15002",
        "ops": "spark-b:15003",
    }
    assert engines["analysts"].token == "s3cret-token"
    assert "s3cret" not in repr(config)


def test_engine_os_users_are_read_by_owner_and_each_user_serves_one_owner(
    tmp_path: Path,
) -> None:
    base = {
        "CONNECT_PLUGIN_SHARE_LEVEL": "user",
        "CONNECT_PLUGIN_LOCAL": "true",
        "CONNECT_PLUGIN_AUTH_TOKENS_FILE": str(tmp_path / "tokens"),
    }
    config = load_config(
        {"conf_dir": tmp_path},
        {**base, "CONNECT_PLUGIN_ENGINE_OS_USERS": "alice=spark-alice, bob = spark-bob"},
    )
    assert config.os_users_of_engines == {"alice": "spark-alice", "bob": "spark-bob"}
    for entries, message in (
        ("alice=spark-a,alice=spark-b", "names 'alice' twice"),
        ("alice=spark-a,bob=spark-a", "'spark-a' to two owners"),
        ("alice", "write owner=os_user"),
    ):
        with pytest.raises(ConfigError, match=message):
            load_config({"conf_dir": tmp_path}, {**base, "CONNECT_PLUGIN_ENGINE_OS_USERS": entries})
    with pytest.raises(ConfigError, match="set share_level to user or group, with local"):
        load_config({"conf_dir": tmp_path}, {"CONNECT_PLUGIN_ENGINE_OS_USERS": "alice=a"})


def test_engine_os_users_need_a_gateway_run_as_root(tmp_path: Path) -> None:
    config = Config(
        share_level="user",
        local=True,
        auth_tokens_file=tmp_path / "tokens",
        engine_os_users=("alice=nobody",),
    )
    with pytest.raises(ConfigError, match=r"only a gateway run as root.*uid 1000"):
        engine_users(config, euid=1000)
    assert engine_users(Config()) == {}
