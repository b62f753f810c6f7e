"""The README and docs/ hold together: their links lead somewhere, and the library example runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
README = CHECKOUT / "README.md"
DOCS = sorted((CHECKOUT / "docs").glob("*.md"))
LINKED_FROM = [README, *DOCS, CHECKOUT / "docker" / "README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchor of each heading: lower case, punctuation dropped, spaces as dashes."""
    headings = re.findall(r"^#{1,6} (.+)$", markdown, re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("page", LINKED_FROM, ids=lambda p: str(p.relative_to(CHECKOUT)))
def test_every_relative_link_reaches_a_file_and_heading(page: Path) -> None:
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.is_file(), f"{page.name} links to {target}, which is not a file"
        if anchor:
            assert anchor in _anchors(linked.read_text()), f"{page.name}: no heading for {target}"


def test_the_readme_links_every_page_of_docs() -> None:
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in LINK.findall(README.read_text())}
    assert set(DOCS) <= linked


def test_loader_example_in_the_docs_runs() -> None:
    scans = CHECKOUT / "docs" / "scans.md"
    blocks = re.findall(r"```python\n(.*?)```", scans.read_text(), re.S)
    example = next(block for block in blocks if "ResultSetLoader" in block)
    namespace: dict[str, object] = {}
    exec(compile(example, str(scans), "exec"), namespace)
    batches = namespace["batches"]
    assert [batch.to_pylist() for batch in batches] == [  # type: ignore[attr-defined]
        [
            {"id": 1, "name": "a", "tags": None},
            {"id": 2, "name": None, "tags": ["x", "y"]},
        ]
    ]
