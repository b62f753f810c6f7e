"""The version ranges pyproject.toml pins, and their lower ends as pip constraints."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"
SPARK_PACKAGES = ("pyspark", "pyspark-client")


def pinned(extras: Sequence[str] = ()) -> list[Requirement]:
    """The base requirements and those of ``extras`` that apply to this interpreter."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    texts = list(project["dependencies"])
    for extra in extras:
        texts += project["optional-dependencies"][extra]
    found = [Requirement(text) for text in texts]
    return [r for r in found if r.marker is None or r.marker.evaluate()]


def lower_end(requirement: Requirement) -> str:
    (bound,) = [s.version for s in requirement.specifier if s.operator == ">="]
    return bound


def lowest_constraints(extras: Sequence[str] = ()) -> list[str]:
    """Every pinned package at the lower end of its range, except Spark's own packages,
    whose version each environment names itself."""
    return [
        f"{r.name}=={lower_end(r)}" for r in pinned(extras) if r.name not in SPARK_PACKAGES
    ]
