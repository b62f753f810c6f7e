"""The README's library example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_loader_example_in_readme_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    example = next(block for block in blocks if "ResultSetLoader" in block)
    namespace: dict[str, object] = {}
    exec(compile(example, str(README), "exec"), namespace)
    batches = namespace["batches"]
    assert [batch.to_pylist() for batch in batches] == [  # type: ignore[attr-defined]
        [
            {"id": 1, "name": "a", "tags": None},
            {"id": 2, "name": None, "tags": ["x", "y"]},
        ]
    ]


def _error_table() -> dict[str, tuple[str, str, str]]:
    """The README's table of error classes: class -> (exception, SQL state, gRPC code)."""
    text = README.read_text()
    start = text.index("| error class | exception (JVM class) |")
    rows: dict[str, tuple[str, str, str]] = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip().strip("`") for cell in line.strip("|").split("|")]
        rows[cells[0]] = (cells[1], cells[2], cells[3])
    return rows


def test_the_readme_lists_every_error_class_the_gateway_emits() -> None:
    from connect_plugin.server.status import emitted

    in_code = {
        e.error_class: (e.exception.rsplit(".", 1)[-1], e.sql_state, e.code.name)
        for e in emitted()
    }
    assert _error_table() == in_code
