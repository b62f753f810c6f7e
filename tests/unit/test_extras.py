"""What the base install says when the Spark part a feature needs is missing."""

from __future__ import annotations

import pytest

from connect_plugin.cli import main
from connect_plugin.extras import (
    CLIENT_INSTALL,
    SERVER_INSTALL,
    require_server,
    require_spark_client,
    spark_client_problem,
)


def test_no_spark_client_names_both_installs() -> None:
    problem = spark_client_problem({}, importable=False)
    assert problem is not None
    assert CLIENT_INSTALL in problem
    assert SERVER_INSTALL in problem


@pytest.mark.parametrize("name", ["pyspark", "pyspark-client"])
def test_a_spark_client_older_than_4_0_is_refused_with_the_upgrade(name: str) -> None:
    problem = spark_client_problem({name: "3.5.1"}, importable=True)
    assert problem == (
        f"connect_plugin's client API needs {name} 4.0 or newer, and {name} 3.5.1 is "
        f'installed: pip install "{name}>=4.0,<4.4"'
    )


@pytest.mark.parametrize(
    "installed",
    [{"pyspark": "4.3.0"}, {"pyspark-client": "4.0.0"}, {"pyspark": "4.1.0.dev1"}, {}],
    ids=["pyspark", "pyspark-client", "dev release", "a Spark distribution on PYTHONPATH"],
)
def test_supported_spark_clients_pass(installed: dict[str, str]) -> None:
    assert spark_client_problem(installed, importable=True) is None


def test_this_environment_has_what_the_client_and_the_gateway_need() -> None:
    require_spark_client()
    require_server()


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    import connect_plugin

    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out == f"connect-plugin {connect_plugin.__version__}\n"
