"""A session's fields have one owner: the registry. No other module of the server writes them.

Every module of ``connect_plugin/server`` but ``sessions/registry.py`` is
read with ``ast`` (as the layer tests read imports) for a write to a field
of ``Session``: an assignment, an augmented assignment or a ``del`` of the
field or of an item of it, or a call of a method that changes a container
in place (``session.writes.pop(...)``). What another part keeps per session
is its own record (a ``SessionPart``), not a field of the registry's.

A session's identity (``user_id``, ``session_id``) is left out: the protobuf
requests bear the same names, and a write to them is a request's. A write
through another name for a field (``writes = session.writes``) is not seen;
the registry hands out no container for others to change.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import connect_plugin.server
from connect_plugin.server.sessions.registry import Session

SERVER = Path(connect_plugin.server.__file__).parent
OWNER = SERVER / "sessions" / "registry.py"
IDENTITY = frozenset({"user_id", "session_id"})
FIELDS = frozenset(f.name for f in dataclasses.fields(Session)) - IDENTITY
CHANGES_IN_PLACE = frozenset(
    {
        "add",
        "append",
        "appendleft",
        "clear",
        "discard",
        "extend",
        "insert",
        "pop",
        "popitem",
        "remove",
        "setdefault",
        "subtract",
        "update",
    }
)


def _field(node: ast.expr) -> str | None:
    """The session field ``node`` is, or an item of (``x.writes[k]``); None for another
    object's own attribute (``self.tables``)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if not isinstance(node, ast.Attribute) or node.attr not in FIELDS:
        return None
    if isinstance(node.value, ast.Name) and node.value.id == "self":
        return None
    return node.attr


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign | ast.Delete):
        found = node.targets
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        found = [node.target]
    else:
        return []
    return [
        element
        for target in found
        for element in (target.elts if isinstance(target, ast.Tuple) else [target])
    ]


def writes(path: Path) -> list[str]:
    """Each write to a session field in the module at ``path``, as its line and field."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        for target in _targets(node):
            field = _field(target)
            if field is not None:
                found.append((node.lineno, f"writes {field}"))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in CHANGES_IN_PLACE
        ):
            field = _field(node.func.value)
            if field is not None:
                found.append((node.lineno, f"changes {field} ({node.func.attr})"))
    return [f"line {line} {what}" for line, what in sorted(found)]


def test_only_the_registry_writes_a_sessions_fields() -> None:
    found = [
        f"{path.relative_to(SERVER)} {write}"
        for path in sorted(SERVER.rglob("*.py"))
        if path != OWNER
        for write in writes(path)
    ]
    assert not found, (
        "a session's fields change only through SessionRegistry's methods: " + "; ".join(found)
    )


def test_the_reader_finds_each_kind_of_write(tmp_path: Path) -> None:
    """The test above passes as much by a blind reader as by a clean tree."""
    module = tmp_path / "writer.py"
    module.write_text(
        "def change(session, other, self):\n"
        "    session.release_asked = True\n"
        "    other.writes['op'] = 't'\n"
        "    del session.writes['op']\n"
        "    session.creating['t'] += 1\n"
        "    session.tables.clear()\n"
        "    a, session.server_side_session_id = 1, 'x'\n"
        "    self.tables = {}\n"
        "    session.tables.get('t')\n"
        "    request.session_id = 'x'\n"
    )
    assert writes(module) == [
        "line 2 writes release_asked",
        "line 3 writes writes",
        "line 4 writes writes",
        "line 5 writes creating",
        "line 6 changes tables (clear)",
        "line 7 writes server_side_session_id",
    ]
    assert {"tables", "writes", "creating", "server_side_session_id"} <= FIELDS
