"""Where the image's files are, for the static tests and the cluster tests.

``docker/`` is not a package (it is the image's build input), so its
entrypoint is loaded from its path, as the image runs it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
DOCKER_DIR = REPO / "docker"
ENTRYPOINT = DOCKER_DIR / "entrypoint.py"
DOCKERFILE = DOCKER_DIR / "Dockerfile"
CLUSTER_COMPOSE = DOCKER_DIR / "compose.yaml"
LOCAL_COMPOSE = DOCKER_DIR / "compose.local.yaml"
ENGINES_COMPOSE = DOCKER_DIR / "compose.engines.yaml"


def load_entrypoint() -> ModuleType:
    spec = importlib.util.spec_from_file_location("connect_plugin_image_entrypoint", ENTRYPOINT)
    assert spec is not None
    assert spec.loader is not None
    module = sys.modules.get(spec.name)
    if module is None:
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module
