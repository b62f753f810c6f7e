"""Test layout: tests/unit needs nothing; tests/integration needs a real Spark Connect server."""

from __future__ import annotations

from pathlib import Path

import pytest

INTEGRATION_DIR = Path(__file__).parent / "integration"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--compat",
        choices=("ends", "all"),
        default="ends",
        help="Spark versions of the compatibility tests: the oldest and newest supported "
        "(default) or every client and server version (./dev compat)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if INTEGRATION_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)
