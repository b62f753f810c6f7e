"""docs/architecture.md maps the house as it stands: every file it names exists, and every
part of the server and of the scan is on it."""

from __future__ import annotations

import re
from pathlib import Path

import connect_plugin

PACKAGE = Path(connect_plugin.__file__).parent
CHECKOUT = PACKAGE.parent
PAGE = CHECKOUT / "docs" / "architecture.md"
PATH = re.compile(r"`([\w./]+(?:\.py|/))`")
"""A path in code font: a module (``.py``) or a package (a trailing ``/``)."""


def _named() -> list[str]:
    return PATH.findall(PAGE.read_text())


def test_every_path_the_page_names_exists() -> None:
    """Paths are under ``connect_plugin/``, or under the checkout for ``tests/``."""
    missing = [
        path
        for path in _named()
        if not (CHECKOUT / path if path.startswith("tests/") else PACKAGE / path).exists()
    ]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_part_of_the_server_and_the_scan_is_on_the_page() -> None:
    named = set(_named())
    parts = [
        f"{package}/{folder.name}/"
        for package in ("server", "scanning")
        for folder in sorted((PACKAGE / package).iterdir())
        if (folder / "__init__.py").is_file()
    ]
    top = [f"server/{module.name}" for module in sorted((PACKAGE / "server").glob("*.py"))]
    missing = [part for part in parts + top if part not in named and part != "server/__init__.py"]
    assert not missing, f"docs/architecture.md does not place: {missing}"


def test_the_reader_of_paths_finds_modules_and_packages() -> None:
    assert PATH.findall("`server/gateway.py` and `scanning/formats/`, not `Gateway`") == [
        "server/gateway.py",
        "scanning/formats/",
    ]
