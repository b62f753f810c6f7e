"""The code blocks of README.md and docs/, and what the suite needs to run them as a reader would.

Every fenced block has a language. Python blocks run: those that use no
Spark session in tests/unit/test_readme.py, those that do page by page, in
order, in one session through the test gateway
(tests/integration/test_docs_examples.py), and those that are pytest test
modules as a project's tests, with the pytest plugin. YAML and JSON blocks
are parsed and compared with what they describe. A block that cannot run
here (a shell command that starts a server for good, a grammar, output) is
preceded by ``<!-- not run: why -->`` and checked statically instead.

A block names the addresses and paths a reader has; the suite substitutes
its own: ``sc://127.0.0.1:15002`` is the test gateway, and a string literal
starting ``/data/`` or ``/tmp/`` lies in the test's example folder, where
``example_data`` wrote the files the docs scan.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
README = CHECKOUT / "README.md"
PAGES = [README, *sorted((CHECKOUT / "docs").glob("*.md"))]
DOCS_ADDRESS = "sc://127.0.0.1:15002"
NOT_RUN = re.compile(r"^\s*<!-- not run: (.+?) -->\s*$")
FENCE = re.compile(r"^( *)```(\S*)\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    text: str
    not_run: str | None

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(CHECKOUT)}:{self.line}"

    def python(self) -> ast.Module:
        return ast.parse(self.text, filename=self.name)

    def uses_spark(self) -> bool:
        """Whether the block needs the session a reader has at hand (``spark``) or makes one."""
        names = {n.id for n in ast.walk(self.python()) if isinstance(n, ast.Name)}
        return "spark" in names or "SparkSession" in names

    def is_pytest_module(self) -> bool:
        return any(
            isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
            for n in self.python().body
        )


def blocks(pages: list[Path] = PAGES) -> list[Block]:
    found = []
    for page in pages:
        lines = page.read_text().splitlines()
        at = 0
        while at < len(lines):
            opened = FENCE.match(lines[at])
            if not opened:
                at += 1
                continue
            indent, lang = opened.groups()
            end = at + 1
            while not re.match(rf"^{indent}```\s*$", lines[end]):
                end += 1
            text = "\n".join(line[len(indent):] for line in lines[at + 1 : end]) + "\n"
            marker = NOT_RUN.match(lines[at - 1]) if at else None
            found.append(Block(page, at + 1, lang, text, marker.group(1) if marker else None))
            at = end + 1
    return found


def localized(block: Block, root: Path, address: str) -> str:
    """The block's code with the test's gateway and example folder in place of the reader's."""
    text = block.text.replace(DOCS_ADDRESS, address)
    return re.sub(r"""(["'])/(data|tmp)/""", lambda m: f"{m.group(1)}{root}/{m.group(2)}/", text)


def example_data(root: Path) -> None:
    """The files the docs scan: json logs that drift across year folders (a field added later,
    an int that becomes a double, names in other cases), and one more file."""
    files = {
        "data/logs/2024/01/a.json": [
            {"id": 1, "level": "info", "ms": 12},
            {"id": 2, "level": "warn", "ms": 7},
        ],
        "data/logs/2024/02/b.json": [{"id": 3, "level": "info", "ms": 3.5, "host": "web-2"}],
        "data/logs/2025/c.json": [{"ID": 4, "Level": "error", "ms": 1}],
        "data/extra.json": [{"id": 5, "ms": 2.5}],
    }
    for name, records in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(record) + "\n" for record in records))
    (root / "tmp").mkdir(exist_ok=True)
