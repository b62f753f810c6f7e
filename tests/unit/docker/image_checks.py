"""The Dockerfile and the compose files as the static tests read them."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dockerfile_parse import DockerfileParser

from tests.image import DOCKERFILE


def tool(name: str) -> str | None:
    """A command installed beside this interpreter (the dev extra), else on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else shutil.which(name)


@dataclass(frozen=True)
class Instruction:
    name: str
    value: str
    line: int


def instructions() -> list[Instruction]:
    parsed = DockerfileParser(str(DOCKERFILE))
    return [
        Instruction(item["instruction"], item["value"], item["startline"] + 1)
        for item in parsed.structure
    ]


def exec_form(value: str) -> list[str]:
    """``["a", "b"]`` of an ENTRYPOINT, CMD or HEALTHCHECK CMD."""
    words: list[str] = json.loads(value[value.index("[") :])
    return words


def copies() -> dict[str, list[str]]:
    """COPY destination -> sources."""
    found = {}
    for item in instructions():
        if item.name == "COPY":
            *sources, destination = shlex.split(item.value)
            found[destination] = sources
    return found


def entrypoint_command() -> list[str]:
    (entry,) = [item for item in instructions() if item.name == "ENTRYPOINT"]
    return exec_form(entry.value)


def health_command() -> list[str]:
    """What the image's healthcheck runs, as compose's ``["CMD", ...]`` test."""
    return ["CMD", *entrypoint_command(), "health"]


def as_dict(value: Any) -> dict[str, Any]:
    """A compose mapping that may be written as a list of ``KEY=value``."""
    if isinstance(value, list):
        return dict(str(item).split("=", 1) for item in value)
    return dict(value or {})
