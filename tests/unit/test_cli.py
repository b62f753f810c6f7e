"""The command line's help and usage errors, as a newcomer first meets them (argparse)."""

from __future__ import annotations

import re

import pytest

from connect_plugin.cli import DEMO_DEFAULTS, main
from connect_plugin.config import load_config
from connect_plugin.errors import ConfigError

COMMANDS = ("serve", "demo", "stop-idle-python-workers")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as stopped:
        main(list(argv))
    out, err = capsys.readouterr()
    assert isinstance(stopped.value.code, int)
    return stopped.value.code, out, err


def _prose(help_text: str) -> str:
    """The description of a help text: the paragraph after the usage."""
    return " ".join(help_text.split("\n\n")[1].split())


def test_the_help_says_what_the_command_does_in_whole_sentences(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _run(capsys, "--help")
    assert (code, err) == (0, "")
    description = _prose(out)
    assert description.startswith("Run the connect-plugin gateway in front of Spark Connect")
    assert description.endswith(".")
    assert "`" not in out
    listed = re.findall(r"^    (\S+)", out, re.M)
    assert listed == list(COMMANDS)
    for command in COMMANDS:
        line = out[out.index(f"    {command}") :].split("\n\n")[0]
        assert len(line.split()) > 3, f"{command} has no help line: {line!r}"


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_describes_itself(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, out, _ = _run(capsys, command, "--help")
    assert code == 0
    assert out.startswith(f"usage: connect-plugin {command} ")
    description = _prose(out)
    assert not description.startswith("options:"), f"{command} has no description"
    assert description.endswith("."), description
    assert "`" not in out


@pytest.mark.parametrize(
    ("argv", "usage", "message"),
    [
        (["serve", "--bogus"], "serve", "unrecognized arguments: --bogus"),
        (["demo", "--port", "1"], "demo", "unrecognized arguments: --port 1"),
        (
            ["stop-idle-python-workers", "--idle-s", "0", "--while-pid", "1"],
            "stop-idle-python-workers",
            "--idle-s must be positive",
        ),
        (["serve", "--port", "x"], "serve", "argument --port: invalid int value: 'x'"),
        ([], "", "the following arguments are required: COMMAND"),
        (["bogus"], "", "argument COMMAND: invalid choice: 'bogus'"),
    ],
)
def test_a_wrong_argument_prints_the_usage_of_its_own_command(
    capsys: pytest.CaptureFixture[str], argv: list[str], usage: str, message: str
) -> None:
    code, out, err = _run(capsys, *argv)
    prog = f"connect-plugin {usage}".strip()
    assert (code, out) == (2, "")
    assert err.startswith(f"usage: {prog} [-h]"), err
    assert err.splitlines()[-1].startswith(f"{prog}: error: {message}"), err


def test_a_log_level_that_is_none_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--local", "--log-level", "LOUD"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "connect-plugin: error: log_level 'LOUD' is not one of DEBUG, INFO, WARNING, ERROR, "
        "CRITICAL\n"
    )


def test_the_demo_logs_warnings_only_unless_told_otherwise() -> None:
    assert load_config({}, env={}, defaults=DEMO_DEFAULTS).log_level == "WARNING"
    assert load_config({}, env={}).log_level == "INFO"
    told = {"CONNECT_PLUGIN_LOG_LEVEL": "DEBUG"}
    assert load_config({}, env=told, defaults=DEMO_DEFAULTS).log_level == "DEBUG"
    assert load_config({"log_level": "INFO"}, env={}, defaults=DEMO_DEFAULTS).log_level == "INFO"
    with pytest.raises(ConfigError, match="log_level 'LOUD'"):
        load_config({"log_level": "LOUD"}, env={})
