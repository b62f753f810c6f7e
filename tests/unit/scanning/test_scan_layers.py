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
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import connect_plugin.scanning

SCANNING = Path(connect_plugin.scanning.__file__).parent
PACKAGE = "connect_plugin.scanning"

ABOVE_FORMATS = tuple(f"{PACKAGE}.{name}" for name in ("planning", "reading", "request", "spark"))
"""The packages built on formats, which a format may not import."""

FORMATS = {
    "base",
    "converters",
    "delimited",
    "json",
    "json_layout",
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
    "loader": frozenset(),
    "files": frozenset(),
    "formats": frozenset({"choices", "files"}),
    "request": frozenset({"choices", "files", "formats", "loader"}),
    "planning": frozenset({"choices", "files", "formats", "request"}),
    "reading": frozenset({"choices", "files", "formats", "loader", "planning", "request"}),
    "spark": frozenset(
        {"choices", "files", "formats", "loader", "planning", "reading", "request"}
    ),
    PUBLIC: frozenset(
        {"choices", "files", "formats", "loader", "planning", "reading", "request"}
    ),
}
"""Each part of the scan core (a package, or the module ``choices``) -> the other parts its
modules may import. A part may always import its own modules; no part imports the public
surface, and the public surface does not import ``spark``, so that ``import
connect_plugin.scanning`` never loads pyspark."""

OUTSIDE = ("connect_plugin.errors",)
"""What the scan core may import of ``connect_plugin`` outside itself: the one error
hierarchy. Not the client, the server or the generated protos."""


def _modules() -> dict[str, Path]:
    """Every module of the scan core by its dotted name (a package by its own name)."""
    modules = {}
    for path in SCANNING.rglob("*.py"):
        parts = path.relative_to(SCANNING).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join((PACKAGE, *parts))] = path
    return modules


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run when a module is imported, ``if TYPE_CHECKING:`` blocks included."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _module_level(block)
            for handler in node.handlers:
                yield from _module_level(handler.body)


def _imports(
    name: str, path: Path, modules: Mapping[str, Path], *, everywhere: bool
) -> Iterator[tuple[int, str]]:
    """(line, imported module) of each import; ``from m import x`` names ``m.x`` where that
    is a module of the scan core, else ``m``."""
    tree = ast.parse(path.read_text(), str(path))
    nodes = ast.walk(tree) if everywhere else _module_level(tree.body)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            submodules = [f"{base}.{alias.name}" for alias in node.names]
            found = [module for module in submodules if module in modules]
            yield from ((node.lineno, module) for module in found)
            if len(found) < len(submodules):
                yield node.lineno, base


def _within(module: str, modules: Mapping[str, Path]) -> str | None:
    """The scan core's module that an import of ``module`` loads, None for one outside it."""
    while module and module not in modules:
        module = module.rpartition(".")[0]
    return module or None


def _graph() -> dict[str, set[str]]:
    """Each scan core module -> the scan core modules it imports when it is imported."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported = _imports(name, path, modules, everywhere=False)
        targets = {_within(module, modules) for _, module in imported}
        graph[name] = {target for target in targets if target is not None and target != name}
    return graph


def _circles(graph: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def _short(module: str) -> str:
    return module.removeprefix(f"{PACKAGE}.")


def _above_formats(module: str) -> bool:
    """Whether importing ``module`` reaches what is built on formats (the package itself
    re-exports the spec and the plan)."""
    return module == PACKAGE or any(
        module == above or module.startswith(f"{above}.") for above in ABOVE_FORMATS
    )


def _edges(graph: Mapping[str, set[str]], circle: frozenset[str]) -> list[str]:
    """The imports that make up a circle, for a failure to name the one to cut."""
    return sorted(
        f"{_short(source)} -> {_short(target)}"
        for source in circle
        for target in graph[source]
        if target in circle
    )


def _part(module: str) -> str:
    """The part of the scan core that ``module`` (a module of it) belongs to."""
    if module == PACKAGE:
        return PUBLIC
    return module.removeprefix(f"{PACKAGE}.").split(".")[0]


def _forbidden(name: str, path: Path, modules: Mapping[str, Path]) -> Iterator[str]:
    """Each import of module ``name`` (at ``path``) that ``LAYERS`` and ``OUTSIDE`` do not
    allow, as its file, line and what it imports."""
    part = _part(name)
    allowed = LAYERS.get(part, frozenset())
    rule = f"{part} may import {', '.join(sorted(allowed)) or 'nothing'} of the scan"
    where = path.relative_to(SCANNING) if path.is_relative_to(SCANNING) else path
    for line, imported in _imports(name, path, modules, everywhere=True):
        target = _within(imported, modules)
        if target is None:
            if imported.split(".")[0] != "connect_plugin" or any(
                imported == outside or imported.startswith(f"{outside}.") for outside in OUTSIDE
            ):
                continue
            yield (
                f"{where} line {line} imports {imported} "
                f"(outside the scan, only {', '.join(OUTSIDE)})"
            )
        elif _part(target) == PUBLIC or _part(target) not in allowed | {part}:
            yield f"{where} line {line} imports {imported} ({rule})"


def _said_imports(docstring: str) -> frozenset[str] | None:
    """The parts a package's docstring says it may import: the ``names`` of its paragraph
    that starts ``Imports from the scan:``; None when it has no such paragraph."""
    for paragraph in docstring.split("\n\n"):
        if paragraph.startswith("Imports from the scan:"):
            return frozenset(re.findall(r"``(\w+)``", paragraph))
    return None


def test_each_part_of_the_scan_imports_only_the_parts_under_it() -> None:
    modules = _modules()
    parts = {_part(name) for name in modules}
    assert parts == set(LAYERS), (
        f"parts without a row in LAYERS: {sorted(parts - set(LAYERS))}; "
        f"rows without a part: {sorted(set(LAYERS) - parts)}"
    )
    wrong = [
        message
        for name, path in sorted(modules.items())
        for message in _forbidden(name, path, modules)
    ]
    assert not wrong, "imports against the layers of connect_plugin/scanning: " + "; ".join(wrong)


def test_each_package_says_what_it_may_import() -> None:
    """The docstring a newcomer reads and the table the test holds the code to agree."""
    packages = sorted(init.parent for init in SCANNING.glob("*/__init__.py"))
    assert len(packages) == len(LAYERS) - 2  # every part but the module choices and PUBLIC
    for package in packages:
        docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
        assert _said_imports(docstring) == LAYERS[package.name], package.name


def test_no_format_module_imports_the_planner_side() -> None:
    """Not at module level, not under ``TYPE_CHECKING``, not inside a function."""
    modules = _modules()
    formats = {
        name: path for name, path in modules.items() if name.startswith(f"{PACKAGE}.formats")
    }
    assert {_short(name) for name in formats} >= {f"formats.{module}" for module in FORMATS}
    wrong = [
        f"{path.relative_to(SCANNING)} line {line} imports {module}"
        for name, path in sorted(formats.items())
        for line, module in _imports(name, path, modules, everywhere=True)
        if _above_formats(module)
    ]
    assert not wrong, (
        "formats sit under the planner and take what they need as arguments "
        "(FormatSettings, Decode, BadRecordSink): " + "; ".join(wrong)
    )


def test_the_scan_core_has_no_import_circle() -> None:
    graph = _graph()
    circles = [_edges(graph, circle) for circle in _circles(graph)]
    assert not circles, f"import circle(s) in connect_plugin/scanning: {circles}"


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
    modules = _modules()
    name, path = f"{PACKAGE}.first", tmp_path / "first.py"
    at_import = list(_imports(name, path, modules, everywhere=False))
    assert at_import == [(1, "typing"), (3, f"{PACKAGE}.planning.plan")]
    everywhere = list(_imports(name, path, modules, everywhere=True))
    assert (5, f"{PACKAGE}.request.spec") in everywhere
    assert _above_formats(f"{PACKAGE}.request.spec")
    assert _above_formats(PACKAGE)
    assert not _above_formats(f"{PACKAGE}.formats.records")
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
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
    modules = _modules()
    found = list(_forbidden(f"{PACKAGE}.formats.layered", tmp_path / "layered.py", modules))
    rule = "(formats may import choices, files of the scan)"
    assert found == [
        f"{tmp_path / 'layered.py'} line 6 imports {PACKAGE}.planning.plan {rule}",
        f"{tmp_path / 'layered.py'} line 8 imports {PACKAGE} {rule}",
        f"{tmp_path / 'layered.py'} line 9 imports connect_plugin.server "
        "(outside the scan, only connect_plugin.errors)",
    ]
    (tmp_path / "floor.py").write_text(f"from {PACKAGE}.choices import OnError\n")
    assert list(_forbidden(f"{PACKAGE}.loader.floor", tmp_path / "floor.py", modules)) == [
        f"{tmp_path / 'floor.py'} line 1 imports {PACKAGE}.choices "
        "(loader may import nothing of the scan)"
    ]
    assert _said_imports("Owns x.\n\nImports from the scan: ``files``, ``loader``.") == {
        "files",
        "loader",
    }
    assert _said_imports("Imports from the scan: nothing.") == frozenset()
    assert _said_imports("Owns x.") is None
