"""The parts of ``connect_plugin`` and what each may import of the others, read from imports.

The scan and the server hold their own packages to their layers
(``tests/unit/scanning/test_scan_layers.py``, ``tests/unit/server/test_server_layers.py``);
this test holds the whole package to its: the error hierarchy and the
generated protos at the floor, the scan on the errors alone, the client
never importing the server, the server using the scan only through its
public faces, and the command line, demo and pytest plugin on top. Every
module of the package is in a part: a sub-package, or a module beside them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import connect_plugin
from tests.unit.import_layers import Layering

ROOT = Path(connect_plugin.__file__).parent
PACKAGE = "connect_plugin"
PUBLIC = "__init__"
"""The part ``connect_plugin/__init__.py`` is: the client's functions, loaded on first use."""

LAYERS: Mapping[str, frozenset[str]] = {
    "errors": frozenset(),
    "proto": frozenset(),
    "upstream_url": frozenset({"errors"}),
    "config": frozenset({"errors", "upstream_url"}),
    "extras": frozenset({"errors"}),
    "scanning": frozenset({"errors"}),
    "worker_python": frozenset(),
    "spark_processes": frozenset({PUBLIC, "errors", "scanning", "worker_python"}),
    "client": frozenset({"errors", "extras", "proto", "scanning"}),
    PUBLIC: frozenset({"client"}),
    "server": frozenset(
        {
            PUBLIC,
            "config",
            "errors",
            "extras",
            "proto",
            "scanning",
            "spark_processes",
            "upstream_url",
            "worker_python",
        }
    ),
    "demo": frozenset({PUBLIC, "client", "config", "server"}),
    "pytest_plugin": frozenset({PUBLIC, "config", "errors", "extras", "server"}),
    "cli": frozenset({PUBLIC, "config", "demo", "errors", "extras", "server", "spark_processes"}),
}
"""Each part of ``connect_plugin`` -> the other parts its modules may import, the floor
first: nothing under the client imports it, nothing but the command line, the demo and the
pytest plugin imports the server."""

FACES: Mapping[str, frozenset[str]] = {
    "scanning": frozenset({"connect_plugin.scanning", "connect_plugin.scanning.spark"}),
    "server": frozenset(
        {
            "connect_plugin.server",
            "connect_plugin.server.stack",
        }
    ),
}
"""The modules through which the other parts reach the scan (its pure names, its Spark
binding) and the server (the gateway, and the stack of a gateway with its Spark)."""

LAYERING = Layering(
    package=PACKAGE,
    root=ROOT,
    layers=LAYERS,
    public=PUBLIC,
    called="connect_plugin",
    outside={},
    faces=FACES,
)


def test_each_part_of_the_package_imports_only_the_parts_under_it() -> None:
    problems = LAYERING.problems()
    assert not problems, "imports against the layers of connect_plugin: " + "; ".join(problems)


def test_the_package_check_names_each_import_it_forbids(tmp_path: Path) -> None:
    """As the scan's and the server's: the check must find what it forbids, and say why."""
    (tmp_path / "layered.py").write_text(
        "def later():\n"
        "    from connect_plugin.server.stack import Stack\n"
        "    from connect_plugin.scanning import ScanOptions\n"
        "    from connect_plugin.scanning.request.options import SCAN_OPTIONS\n"
    )
    where = tmp_path / "layered.py"
    known = LAYERING.modules()
    rule = "(client may import errors, extras, proto, scanning of connect_plugin)"
    assert list(LAYERING.forbidden(f"{PACKAGE}.client.layered", where, known)) == [
        f"{where} line 2 imports {PACKAGE}.server.stack {rule}",
        f"{where} line 4 imports {PACKAGE}.scanning.request.options (scanning is reached "
        f"through {PACKAGE}.scanning, {PACKAGE}.scanning.spark)",
    ]
    assert LAYERING.part(f"{PACKAGE}.cli") == "cli"
    assert LAYERING.part(f"{PACKAGE}.scanning.request.options") == "scanning"
    assert LAYERING.part(PACKAGE) == PUBLIC
