"""The scan core's layers, read from its imports: formats under the planner, and no circles.

A format is handed its settings, the file, what to decode and a sink for
bad records; it must not reach up to the spec, the options, the plan or
the row path, which are all built on formats. Each module's imports are
read with ``ast``, not by importing it, so an import under ``if
TYPE_CHECKING:`` or inside a function counts as much as any other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import connect_plugin.scanning

SCANNING = Path(connect_plugin.scanning.__file__).parent
PACKAGE = "connect_plugin.scanning"

ABOVE_FORMATS = tuple(f"{PACKAGE}.{name}" for name in ("planning", "reading", "request"))
"""The modules built on formats, which a format may not import."""

FORMATS = {"base", "delimited", "json", "json_layout", "json_structure", "parquet"}


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
    assert not _above_formats(f"{PACKAGE}.records")
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        frozenset({"a", "b", "c"})
    ]
