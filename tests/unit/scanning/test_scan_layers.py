"""The scan core's layers, read from its imports: each package imports only those below it.

``LAYERS`` is the table of what each part of ``connect_plugin/scanning`` may
import of the others, the same one each package's docstring gives; the
imports of every module are held to it, formats in particular stay under
the request and the planner, and no modules import each other in a circle.
A format is handed its settings, the file, what to decode and a sink for
bad records; it must not reach up to the spec, the options, the plan or
the row path, which are all built on formats. Each module's imports are
read with ``ast``, not by importing it, so an import under ``if
TYPE_CHECKING:`` or inside a function counts as much as any other.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import connect_plugin.scanning
from tests.unit.import_layers import Layering, circle_edges, circles, graph, imports, said_imports

SCANNING = Path(connect_plugin.scanning.__file__).parent
PACKAGE = "connect_plugin.scanning"

ABOVE_FORMATS = tuple(f"{PACKAGE}.{name}" for name in ("planning", "reading", "request", "spark"))
"""The packages built on formats, which a format may not import."""

FORMATS = {
    "base",
    "converters",
    "delimited",
    "json",
    "json_keys",
    "json_layout",
    "json_records",
    "json_structure",
    "parquet",
    "records",
    "rescue",
    "widening",
}

PUBLIC = "__init__"
"""The part ``connect_plugin/scanning/__init__.py`` is: the public names, re-exported."""

LAYERS: Mapping[str, frozenset[str]] = {
    "choices": frozenset(),
    "names": frozenset(),
    "loader": frozenset(),
    "files": frozenset(),
    "formats": frozenset({"choices", "names", "files"}),
    "request": frozenset({"choices", "names", "files", "formats", "loader"}),
    "planning": frozenset({"choices", "names", "files", "formats", "request"}),
    "reading": frozenset(
        {"choices", "names", "files", "formats", "loader", "planning", "request"}
    ),
    "spark": frozenset(
        {"choices", "names", "files", "formats", "loader", "planning", "reading", "request"}
    ),
    PUBLIC: frozenset(
        {"choices", "names", "files", "formats", "loader", "planning", "reading", "request"}
    ),
}
"""Each part of the scan core (a package, or one of the modules ``choices`` and ``names``) ->
the other parts its modules may import. A part may always import its own modules; no part imports the public
surface, and the public surface does not import ``spark``, so that ``import
connect_plugin.scanning`` never loads pyspark."""

OUTSIDE = frozenset({"connect_plugin.errors"})
"""What every part of the scan core may import of ``connect_plugin`` outside itself: the
one error hierarchy. Not the client, the server or the generated protos."""


LAYERING = Layering(
    package=PACKAGE,
    root=SCANNING,
    layers=LAYERS,
    public=PUBLIC,
    called="the scan",
    outside={part: OUTSIDE for part in LAYERS},
)


def _short(module: str) -> str:
    return LAYERING.short(module)


def _above_formats(module: str) -> bool:
    """Whether importing ``module`` reaches what is built on formats (the package itself
    re-exports the spec and the plan)."""
    return module == PACKAGE or any(
        module == above or module.startswith(f"{above}.") for above in ABOVE_FORMATS
    )


def _said_imports(docstring: str) -> frozenset[str] | None:
    return said_imports(docstring, "Imports from the scan:")


def test_each_part_of_the_scan_imports_only_the_parts_under_it() -> None:
    problems = LAYERING.problems()
    assert not problems, "imports against the layers of connect_plugin/scanning: " + "; ".join(problems)


def test_each_package_says_what_it_may_import() -> None:
    """The docstring a newcomer reads and the table the test holds the code to agree."""
    packages = sorted(init.parent for init in SCANNING.glob("*/__init__.py"))
    assert len(packages) == len(LAYERS) - 3  # every part but the modules choices, names, PUBLIC
    for package in packages:
        docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
        assert _said_imports(docstring) == LAYERS[package.name], package.name


def test_no_format_module_imports_the_planner_side() -> None:
    """Not at module level, not under ``TYPE_CHECKING``, not inside a function."""
    modules = LAYERING.modules()
    formats = {
        name: path for name, path in modules.items() if name.startswith(f"{PACKAGE}.formats")
    }
    assert {_short(name) for name in formats} >= {f"formats.{module}" for module in FORMATS}
    wrong = [
        f"{path.relative_to(SCANNING)} line {line} imports {module}"
        for name, path in sorted(formats.items())
        for line, module in imports(name, path, modules, everywhere=True)
        if _above_formats(module)
    ]
    assert not wrong, (
        "formats sit under the planner and take what they need as arguments "
        "(FormatSettings, Decode, BadRecordSink): " + "; ".join(wrong)
    )


def test_the_scan_core_has_no_import_circle() -> None:
    edges = graph(LAYERING.modules())
    found = [circle_edges(edges, circle, _short) for circle in circles(edges)]
    assert not found, f"import circle(s) in connect_plugin/scanning: {found}"


def test_the_circle_finder_sees_a_circle_and_its_type_checking_imports(tmp_path: Path) -> None:
    """The layer tests above pass as much by a blind reader as by a clean tree; this one
    holds the reader to finding what it must."""
    (tmp_path / "first.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        f"    from {PACKAGE}.planning.plan import ScanPlan\n"
        "def later():\n"
        f"    from {PACKAGE}.request import spec\n"
    )
    modules = LAYERING.modules()
    name, path = f"{PACKAGE}.first", tmp_path / "first.py"
    at_import = list(imports(name, path, modules, everywhere=False))
    assert at_import == [(1, "typing"), (3, f"{PACKAGE}.planning.plan")]
    everywhere = list(imports(name, path, modules, everywhere=True))
    assert (5, f"{PACKAGE}.request.spec") in everywhere
    assert _above_formats(f"{PACKAGE}.request.spec")
    assert _above_formats(PACKAGE)
    assert not _above_formats(f"{PACKAGE}.formats.records")
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        frozenset({"a", "b", "c"})
    ]


def test_the_layer_check_names_each_import_it_forbids(tmp_path: Path) -> None:
    """As the circle finder above: the check must find an import it forbids wherever it
    sits (at module level, under ``TYPE_CHECKING``, in a function) and name it."""
    (tmp_path / "layered.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import connect_plugin.errors\n"
        f"from {PACKAGE}.files.files import ScanFile\n"
        f"from {PACKAGE}.formats import records\n"
        "if TYPE_CHECKING:\n"
        f"    from {PACKAGE}.planning.plan import ScanPlan\n"
        "def later():\n"
        f"    from {PACKAGE} import ScanSpec\n"
        "    from connect_plugin.server import scans\n"
    )
    modules = LAYERING.modules()
    found = list(LAYERING.forbidden(f"{PACKAGE}.formats.layered", tmp_path / "layered.py", modules))
    rule = "(formats may import choices, files, names of the scan)"
    assert found == [
        f"{tmp_path / 'layered.py'} line 6 imports {PACKAGE}.planning.plan {rule}",
        f"{tmp_path / 'layered.py'} line 8 imports {PACKAGE} {rule}",
        f"{tmp_path / 'layered.py'} line 9 imports connect_plugin.server.scans "
        "(formats may import connect_plugin.errors outside the scan)",
    ]
    (tmp_path / "floor.py").write_text(f"from {PACKAGE}.choices import OnError\n")
    assert list(LAYERING.forbidden(f"{PACKAGE}.loader.floor", tmp_path / "floor.py", modules)) == [
        f"{tmp_path / 'floor.py'} line 1 imports {PACKAGE}.choices "
        "(loader may import nothing of the scan)"
    ]
    assert _said_imports("Owns x.\n\nImports from the scan: ``files``, ``loader``.") == {
        "files",
        "loader",
    }
    assert _said_imports("Imports from the scan: nothing.") == frozenset()
    assert _said_imports("Owns x.") is None
