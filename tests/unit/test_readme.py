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
