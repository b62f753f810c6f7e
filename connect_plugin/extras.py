"""The install extras and what each part of the package needs from them.

The base package carries no Spark distribution, so the parts that need one
check for it where they start and say which ``pip install`` brings it,
instead of failing deep inside an import with a bare module name.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping
from importlib import metadata

from connect_plugin.errors import EnvironmentProblem

CLIENT_INSTALL = 'pip install "connect-plugin[client]"'
"""The thin Spark Connect client (pyspark-client, no jars): for laptops and notebooks."""

SERVER_INSTALL = 'pip install "connect-plugin[server]"'
"""Full pyspark and the gateway's own needs: the gateway, the embedded server, Spark's workers."""

SPARK_DISTRIBUTIONS = ("pyspark", "pyspark-client")
"""The distributions that install the ``pyspark`` package; both own the ``pyspark/`` folder."""

OLDEST_SPARK = (4, 0)
"""The oldest Spark Connect client the client API works with."""


def installed_spark_clients() -> dict[str, str]:
    """The installed distributions among pyspark and pyspark-client, with their versions."""
    found = {}
    for name in SPARK_DISTRIBUTIONS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def spark_client_problem(installed: Mapping[str, str], importable: bool) -> str | None:
    """Why the client API cannot run with these installed distributions, if it cannot.

    ``importable``: whether ``pyspark`` can be imported at all; it can be without any
    installed distribution (a Spark distribution's ``python/`` on ``PYTHONPATH``).
    """
    if not importable:
        return (
            "connect_plugin's client API needs a Spark Connect client, and neither "
            f"pyspark-client nor pyspark is installed: {CLIENT_INSTALL}"
            f" (the thin client), or {SERVER_INSTALL} (full pyspark, with Spark's jars)"
        )
    for name, version in installed.items():
        if _release(version) < OLDEST_SPARK:
            oldest = ".".join(map(str, OLDEST_SPARK))
            return (
                f"connect_plugin's client API needs {name} {oldest} or newer, and {name} "
                f'{version} is installed: pip install "{name}>={oldest},<4.4"'
            )
    return None


def require_spark_client() -> None:
    """Raise ImportError with the pip command when no usable Spark Connect client is installed."""
    problem = spark_client_problem(
        installed_spark_clients(), importlib.util.find_spec("pyspark") is not None
    )
    if problem is not None:
        raise ImportError(problem)


def require_server() -> None:
    """Raise EnvironmentProblem with the pip command when the server install is missing."""
    try:
        importlib.import_module("connect_plugin.server")
    except ModuleNotFoundError as exc:
        raise EnvironmentProblem(
            f"the gateway needs the server install, and {exc.name!r} is missing: {SERVER_INSTALL}"
        ) from exc


def _release(version: str) -> tuple[int, ...]:
    """Major and minor of a version string such as ``4.1.0.dev1``."""
    return tuple(int(number) for number in re.findall(r"\d+", version)[:2])
