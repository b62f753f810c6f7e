"""Release hygiene: ``python -m build`` output, the base install, and what it does without Spark.

The base install (the wheel, no extras) brings no Spark distribution: the
client API then fails at import with the pip command that fixes it, the CLI
tells how to get the gateway, and pytest still runs with the plugin's entry
point loaded.
"""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

import pytest

import connect_plugin
from tests.integration.installs.venvs import Dists, Venv, VenvCache

DEFAULT_SETTINGS = ("server_conf/connect-plugin.toml", "server_conf/spark-defaults.conf")
CLIENT_HINT = 'pip install "connect-plugin[client]"'
SERVER_HINT = 'pip install "connect-plugin[server]"'


@pytest.fixture(scope="module")
def base(venvs: VenvCache, dists: Dists) -> Venv:
    """The wheel without extras, plus pytest to load the plugin with."""
    return venvs.get("base (wheel, no extras)", str(dists.wheel), then=lambda v: v.install("pytest"))


def test_one_version_names_the_sdist_and_the_wheel(dists: Dists) -> None:
    version = connect_plugin.__version__
    assert dists.sdist.name == f"connect_plugin-{version}.tar.gz"
    assert dists.wheel.name == f"connect_plugin-{version}-py3-none-any.whl"


def test_the_wheel_carries_the_default_settings_and_entry_points(dists: Dists) -> None:
    with zipfile.ZipFile(dists.wheel) as wheel:
        names = set(wheel.namelist())
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        entries = wheel.read(entry_points).decode()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        requires = [
            line for line in wheel.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist:")
        ]
    assert {f"connect_plugin/{name}" for name in DEFAULT_SETTINGS} <= names
    assert {"connect_plugin/py.typed", "connect_plugin/proto/relations_pb2.pyi"} <= names
    assert "connect-plugin = connect_plugin.cli:main" in entries
    assert "connect_plugin = connect_plugin.pytest_plugin" in entries
    base = [line for line in requires if "extra ==" not in line]
    assert not [line for line in base if "pyspark" in line], base


def test_the_sdist_holds_the_sources(dists: Dists) -> None:
    with tarfile.open(dists.sdist) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {"pyproject.toml", "README.md", "proto/connect_plugin/v1/relations.proto"} <= names
    assert set(DEFAULT_SETTINGS) <= names


def test_the_sdist_installs_in_a_fresh_venv(venvs: VenvCache, dists: Dists) -> None:
    venv = venvs.get("sdist, no dependencies", "--no-deps", str(dists.sdist))
    package = venv.site_packages() / "connect_plugin"
    assert all((package / name).is_file() for name in DEFAULT_SETTINGS)
    version = venv.run(["-m", "connect_plugin.cli", "--version"]).stdout
    assert version.strip() == f"connect-plugin {connect_plugin.__version__}"


def test_the_base_install_has_no_spark_and_the_packaged_settings(base: Venv) -> None:
    installed = base.distributions()
    assert "pyspark" not in installed
    assert "pyspark-client" not in installed
    done = base.run(
        [
            "-c",
            "from connect_plugin.config import load_config; c = load_config(env={}); "
            "print(c.conf_dir); print(c.port, c.temp_table_format)",
        ]
    )
    conf_dir, values = done.stdout.splitlines()
    assert Path(conf_dir) == base.site_packages() / "connect_plugin" / "server_conf"
    assert values == "15002 parquet"


def test_connect_plugin_version(base: Venv) -> None:
    done = base.run(["--version"], program="connect-plugin")
    assert done.stdout.strip() == f"connect-plugin {connect_plugin.__version__}"


@pytest.mark.parametrize(
    "statement",
    [
        "import connect_plugin.client",
        "from connect_plugin import scan",
        "import connect_plugin; connect_plugin.create_temp_table",
    ],
)
def test_the_client_api_without_spark_names_the_pip_command(base: Venv, statement: str) -> None:
    done = base.run(["-c", statement], check=False)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: "), done.stderr[-2000:]
    assert CLIENT_HINT in last
    assert SERVER_HINT in last


def test_the_scan_core_runs_on_the_base_install(base: Venv, scan_data: Path) -> None:
    code = (
        "import sys; from connect_plugin.scanning import ScanSpec, ScanReader, plan_scan; "
        "plan = plan_scan(ScanSpec([sys.argv[1]], 'json', columns=['id', 'dir0'])); "
        "print(sum(b.num_rows for b in ScanReader(plan).read()))"
    )
    done = base.run(["-c", code, str(scan_data / "logs")])
    assert done.stdout.strip() == "4"


@pytest.mark.parametrize(
    "args",
    [["serve", "--upstream", "sc://127.0.0.1:15002"], ["serve", "--local"], ["demo"]],
    ids=["serve --upstream", "serve --local", "demo"],
)
def test_the_gateway_without_the_server_install_names_the_pip_command(
    base: Venv, args: list[str], tmp_path: Path
) -> None:
    done = base.run(
        [*args, "--workspace", str(tmp_path / "ws")], program="connect-plugin", check=False
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert SERVER_HINT in done.stderr
    assert not (tmp_path / "ws").exists()


def test_pytest_runs_with_the_plugin_and_no_spark(base: Venv, tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    done = base.run(["-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)], cwd=tmp_path)
    assert "1 passed" in done.stdout
    listed = base.run(["-m", "pytest", "--fixtures", "-p", "no:cacheprovider", str(tmp_path)], cwd=tmp_path)
    assert "connect_plugin_test_spark" in listed.stdout
