"""Reading a package's layers from its imports, for the layer tests of the scan and the server.

Each module's imports are read with ``ast``, not by importing it, so an
import under ``if TYPE_CHECKING:`` or inside a function counts as much as
any other. A ``Layering`` names a package, its parts (its sub-packages, and
any module given a row of its own), what each part may import of the
others and of ``connect_plugin`` outside the package, and the public faces
through which the others reach a part; every module not in a part belongs to
the package's top, ``public``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module under ``root`` (the folder of ``package``) by its dotted name (a package
    by its own name)."""
    found = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join((package, *parts))] = path
    return found


def module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run when a module is imported, ``if TYPE_CHECKING:`` blocks included."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from module_level(node.body)
            yield from module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from module_level(block)
            for handler in node.handlers:
                yield from module_level(handler.body)


def imports(
    name: str, path: Path, known: Mapping[str, Path], *, everywhere: bool
) -> Iterator[tuple[int, str]]:
    """(line, imported module) of each import; ``from m import x`` names ``m.x`` where that
    is one of the ``known`` modules, else ``m``."""
    tree = ast.parse(path.read_text(), str(path))
    nodes = ast.walk(tree) if everywhere else module_level(tree.body)
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
            found = [module for module in submodules if module in known]
            yield from ((node.lineno, module) for module in found)
            if len(found) < len(submodules):
                yield node.lineno, base


def within(module: str, known: Mapping[str, Path]) -> str | None:
    """The known module that an import of ``module`` loads, None for one outside them."""
    while module and module not in known:
        module = module.rpartition(".")[0]
    return module or None


def graph(known: Mapping[str, Path]) -> dict[str, set[str]]:
    """Each known module -> the known modules it imports when it is imported."""
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        imported = imports(name, path, known, everywhere=False)
        targets = {within(module, known) for _, module in imported}
        edges[name] = {target for target in targets if target is not None and target != name}
    return edges


def circles(edges: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
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
                found.append(frozenset(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def circle_edges(
    edges: Mapping[str, set[str]], circle: frozenset[str], short: Callable[[str], str]
) -> list[str]:
    """The imports that make up a circle, for a failure to name the one to cut."""
    return sorted(
        f"{short(source)} -> {short(target)}"
        for source in circle
        for target in edges[source]
        if target in circle
    )


def said_imports(docstring: str, opening: str) -> frozenset[str] | None:
    """The parts a package's docstring says it may import: the ``names`` of its paragraph
    that starts with ``opening`` (``Imports from the scan:``); None when it has none."""
    for paragraph in docstring.split("\n\n"):
        if paragraph.startswith(opening):
            return frozenset(re.findall(r"``(\w+)``", paragraph))
    return None


def allows(names: frozenset[str], module: str) -> bool:
    """Whether ``names`` allow importing ``module``: a name is the module itself, or with
    ``.*`` the module and everything under it."""
    return any(
        module == name.removesuffix(".*")
        or (name.endswith(".*") and module.startswith(name.removesuffix("*")))
        for name in names
    )


PLUGIN = Path(__file__).resolve().parents[2] / "connect_plugin"


@dataclass(frozen=True)
class Layering:
    """A package's parts, the table of what each may import of the others, and what each
    may import of ``connect_plugin`` outside the package."""

    package: str
    root: Path
    layers: Mapping[str, frozenset[str]]
    public: str
    """The part of the package's own ``__init__`` and of every module in no other part."""
    called: str
    """How a failure names the package: ``the scan``."""
    outside: Mapping[str, frozenset[str]]
    """Each part -> the modules of ``connect_plugin`` outside the package it may import
    (``connect_plugin.errors``; ``connect_plugin.proto.*``: the package and all in it)."""
    loose_modules_are_public: bool = False
    """Whether a module directly in the package, in no sub-package, belongs to ``public``
    (the server's composition root) rather than being a part of its own (the scan's
    ``choices``)."""
    faces: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """A part -> the only modules of it that other parts may import (its public face);
    a part not named here may be imported anywhere."""

    def modules(self) -> dict[str, Path]:
        return modules(self.root, self.package)

    def short(self, module: str) -> str:
        return module.removeprefix(f"{self.package}.")

    def part(self, module: str) -> str:
        """The part of the package that ``module`` (a module of it) belongs to."""
        if module == self.package:
            return self.public
        first = self.short(module).split(".")[0]
        if self.loose_modules_are_public and not (self.root / first).is_dir():
            return self.public
        return first

    def forbidden(self, name: str, path: Path, known: Mapping[str, Path]) -> Iterator[str]:
        """Each import of module ``name`` (at ``path``) that the table, the faces and the
        outside rows do not allow, as its file, line and what it imports."""
        part = self.part(name)
        allowed = self.layers.get(part, frozenset())
        rule = f"{part} may import {', '.join(sorted(allowed)) or 'nothing'} of {self.called}"
        outside = self.outside.get(part, frozenset())
        where = path.relative_to(self.root) if path.is_relative_to(self.root) else path
        everything = {**modules(PLUGIN, "connect_plugin"), **known}
        for line, imported in imports(name, path, everything, everywhere=True):
            if imported.split(".")[0] != "connect_plugin":
                continue
            target = within(imported, known)
            if target is None:
                module = within(imported, everything) or imported
                if not allows(outside, module):
                    said = ", ".join(sorted(outside)) or "nothing"
                    yield f"{where} line {line} imports {module} ({part} may import {said} outside {self.called})"
                continue
            other = self.part(target)
            if other not in allowed | {part}:
                yield f"{where} line {line} imports {imported} ({rule})"
            elif other != part and other in self.faces and target not in self.faces[other]:
                face = ", ".join(sorted(self.faces[other]))
                yield f"{where} line {line} imports {target} ({other} is reached through {face})"

    def problems(self) -> list[str]:
        """Every way the package's modules break the table: a part the table has no row for,
        a row for no part, each forbidden import."""
        known = self.modules()
        parts = {self.part(name) for name in known}
        found = [f"part without a row in the table: {p}" for p in sorted(parts - set(self.layers))]
        found += [f"row without a part: {p}" for p in sorted(set(self.layers) - parts)]
        found += [
            message
            for name, path in sorted(known.items())
            for message in self.forbidden(name, path, known)
        ]
        return found
