"""The server's layers, read from its imports: each package imports only those below it.

``LAYERS`` is the table of what each part of ``connect_plugin/server`` may
import of the others, the same one each package's docstring and the
server's own give; the imports of every module are held to it, wherever
they sit (under ``TYPE_CHECKING``, inside a function), and no modules import
each other in a circle, in the server or anywhere in ``connect_plugin``. What
a lower part needs from a higher one is handed to it, typed by a type of its
own (the forwarder's ``CallMetrics``, ``CallObserver`` and ``RequestHook``).
``OUTSIDE`` says what each part may import of ``connect_plugin`` beyond the
server: the scan only through its public faces, and nothing of the plugin's
domain in ``transport``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import connect_plugin
import connect_plugin.server
from tests.unit.import_layers import (
    Layering,
    circle_edges,
    circles,
    graph,
    modules,
    said_imports,
)

SERVER = Path(connect_plugin.server.__file__).parent
PACKAGE = "connect_plugin.server"

TOP = "top"
"""The part of the composition root: the modules directly in ``connect_plugin/server``
(``gateway``, ``intercept``, ``stack``, ``embedded``, ...) and its ``__init__``."""

LAYERS: Mapping[str, frozenset[str]] = {
    "model": frozenset(),
    "transport": frozenset(),
    "table_files": frozenset({"model", "transport"}),
    "sessions": frozenset({"model", "table_files", "transport"}),
    "monitoring": frozenset({"model", "sessions", "transport"}),
    "statements": frozenset({"model", "sessions", "table_files", "transport"}),
    "tables": frozenset({"model", "sessions", "statements", "table_files", "transport"}),
    "scans": frozenset({"model", "sessions", "statements", "table_files", "tables", "transport"}),
    TOP: frozenset(
        {
            "model",
            "monitoring",
            "scans",
            "sessions",
            "statements",
            "table_files",
            "tables",
            "transport",
        }
    ),
}
"""Each package of the server -> the other packages its modules may import. A part may
always import its own modules; no package imports the top, which wires them together."""

SCAN = frozenset({"connect_plugin.scanning", "connect_plugin.scanning.spark"})
"""The scan's public faces: its pure names, and its Spark binding (the data source)."""
BASE = frozenset({"connect_plugin.errors", "connect_plugin.config"})
"""The one error hierarchy and the gateway's configuration, which every part may import."""

OUTSIDE: Mapping[str, frozenset[str]] = {
    "model": frozenset({"connect_plugin.errors", "connect_plugin.proto.*"}) | SCAN,
    "transport": BASE | {"connect_plugin.upstream_url"},
    "table_files": BASE,
    "sessions": BASE | {"connect_plugin.spark_processes.python_daemons"},
    "monitoring": BASE,
    "statements": BASE | {"connect_plugin.proto.*"} | SCAN,
    "tables": BASE | {"connect_plugin.proto.*"},
    "scans": BASE | {"connect_plugin.proto.*"} | SCAN,
    TOP: BASE
    | SCAN
    | {
        "connect_plugin",
        "connect_plugin.extras",
        "connect_plugin.proto.*",
        "connect_plugin.upstream_url",
        "connect_plugin.spark_processes.*",
        "connect_plugin.worker_python",
    },
}
"""Each part of the server -> what it may import of ``connect_plugin`` outside the server.
Transport is transport: nothing of the plugin's domain (its protos) nor of the scan. The
scan only through its public faces; never the client, nor the command line, demo and pytest
plugin that stand on the server."""

OPENING = "Imports from the server:"


LAYERING = Layering(
    package=PACKAGE,
    root=SERVER,
    layers=LAYERS,
    public=TOP,
    called="the server",
    outside=OUTSIDE,
    loose_modules_are_public=True,
)


def test_each_part_of_the_server_imports_only_the_parts_under_it() -> None:
    problems = LAYERING.problems()
    assert not problems, "imports against the layers of connect_plugin/server: " + "; ".join(problems)


def test_each_package_says_what_it_may_import() -> None:
    """The docstring a newcomer reads and the table the test holds the code to agree."""
    packages = sorted(init.parent for init in SERVER.glob("*/__init__.py"))
    assert {package.name for package in packages} == set(LAYERS) - {TOP}
    for package in packages:
        docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
        assert said_imports(docstring, OPENING) == LAYERS[package.name], package.name


def test_the_server_lists_its_parts_from_the_floor_up() -> None:
    """``connect_plugin/server/__init__.py`` maps the parts in an order in which each
    imports only parts listed before it."""
    docstring = connect_plugin.server.__doc__ or ""
    listed = [
        line.removeprefix("- ``").partition("``")[0]
        for line in docstring.splitlines()
        if line.startswith("- ``")
    ]
    assert set(listed) == set(LAYERS) - {TOP}
    for place, part in enumerate(listed):
        assert LAYERS[part] <= set(listed[:place]), part


def test_the_server_has_no_import_circle() -> None:
    edges = graph(LAYERING.modules())
    found = [circle_edges(edges, circle, LAYERING.short) for circle in circles(edges)]
    assert not found, f"import circle(s) in connect_plugin/server: {found}"


def test_connect_plugin_has_no_import_circle() -> None:
    """Across the client, the scan, the server and the modules beside them."""
    root = Path(connect_plugin.__file__).parent
    edges = graph(modules(root, "connect_plugin"))
    found = [circle_edges(edges, circle, str) for circle in circles(edges)]
    assert not found, f"import circle(s) in connect_plugin: {found}"


def test_the_layer_check_names_each_import_it_forbids(tmp_path: Path) -> None:
    """The layer tests above pass as much by a blind reader as by a clean tree; this one
    holds the reader to finding a forbidden import wherever it sits (at module level, under
    ``TYPE_CHECKING``, in a function) and to naming it."""
    (tmp_path / "layered.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import connect_plugin.errors\n"
        f"from {PACKAGE}.transport.plans import decode\n"
        f"from {PACKAGE}.sessions import registry\n"
        "if TYPE_CHECKING:\n"
        f"    from {PACKAGE}.monitoring.metrics import GatewayMetrics\n"
        "def later():\n"
        f"    from {PACKAGE} import serve\n"
        "    from connect_plugin.client.scan import scan\n"
    )
    found = LAYERING.modules()
    where = tmp_path / "layered.py"
    rule = "(transport may import nothing of the server)"
    outside = "connect_plugin.config, connect_plugin.errors, connect_plugin.upstream_url"
    assert list(LAYERING.forbidden(f"{PACKAGE}.transport.layered", where, found)) == [
        f"{where} line 4 imports {PACKAGE}.sessions.registry {rule}",
        f"{where} line 6 imports {PACKAGE}.monitoring.metrics {rule}",
        f"{where} line 8 imports {PACKAGE} {rule}",
        f"{where} line 9 imports connect_plugin.client.scan "
        f"(transport may import {outside} outside the server)",
    ]
    (tmp_path / "scanned.py").write_text(
        "from connect_plugin.scanning import ScanOptions\n"
        "from connect_plugin.scanning.spark import ScanDataSource\n"
        "from connect_plugin.scanning.request.options import ScanOptions\n"
        "from connect_plugin import proto\n"
    )
    scanned = tmp_path / "scanned.py"
    assert list(LAYERING.forbidden(f"{PACKAGE}.scans.scanned", scanned, found)) == [
        f"{scanned} line 3 imports connect_plugin.scanning.request.options "
        f"(scans may import {', '.join(sorted(OUTSIDE['scans']))} outside the server)"
    ]
    assert [
        message.partition(" (")[0]
        for message in LAYERING.forbidden(f"{PACKAGE}.transport.scanned", scanned, found)
    ] == [
        f"{scanned} line {line} imports {module}"
        for line, module in (
            (1, "connect_plugin.scanning"),
            (2, "connect_plugin.scanning.spark"),
            (3, "connect_plugin.scanning.request.options"),
            (4, "connect_plugin.proto"),
        )
    ]
    (tmp_path / "wired.py").write_text(
        f"from {PACKAGE}.gateway import Gateway\nfrom {PACKAGE}.scans import relation\n"
    )
    assert list(LAYERING.forbidden(f"{PACKAGE}.tables.wired", tmp_path / "wired.py", found)) == [
        f"{tmp_path / 'wired.py'} line 1 imports {PACKAGE}.gateway "
        "(tables may import model, sessions, statements, table_files, transport of the server)",
        f"{tmp_path / 'wired.py'} line 2 imports {PACKAGE}.scans.relation "
        "(tables may import model, sessions, statements, table_files, transport of the server)",
    ]
    assert list(LAYERING.forbidden(f"{PACKAGE}.stack", tmp_path / "wired.py", found)) == []
    assert LAYERING.part(f"{PACKAGE}.intercept") == TOP
    assert LAYERING.part(PACKAGE) == TOP
    assert LAYERING.part(f"{PACKAGE}.sessions") == "sessions"
    assert circles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [frozenset({"a", "b"})]
    assert said_imports(f"Owns x.\n\n{OPENING} ``sessions``, ``transport``.", OPENING) == {
        "sessions",
        "transport",
    }
    assert said_imports(f"{OPENING} nothing.", OPENING) == frozenset()
