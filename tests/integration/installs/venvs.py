"""Fresh virtual environments, installed the way a user installs the package.

Each environment is made from scratch by the tests, with nothing borrowed
from the test environment: its own interpreter prefix, packages installed by
pip from the package index (pip's cache makes a second install fast), the
project installed from a copy of the checkout or from the wheel built from it.
Programs run in it with an environment stripped of anything that could point
back at the checkout or the test environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

INSTALL_TIMEOUT_S = 900
RUN_TIMEOUT_S = 300
INHERITED_ENV = (
    "PATH",
    "HOME",
    "XDG_CACHE_HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "JAVA_HOME",
    "TERM",
    "CONNECT_PLUGIN_CLASS_ARCHIVE",
)
"""What a program in a fresh environment sees of ours: where things live on this machine, and
the suite's choice of no JVM class archive (``tests/conftest.py``)."""

PIP_ENV_PREFIX = "PIP_"
"""pip's own settings (index, certificates) on this machine, which every install here uses."""


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in INHERITED_ENV or k.startswith(PIP_ENV_PREFIX)}
    env.update(extra or {})
    return env


@dataclass
class Venv:
    """One virtual environment and what was installed into it."""

    path: Path
    installed: list[str] = field(default_factory=list)
    install_seconds: float = 0.0

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    @property
    def bin(self) -> Path:
        return self.path / "bin"

    def create(self) -> Venv:
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(self.path)],
            check=True, capture_output=True, env=clean_env(),
        )
        return self

    def install(self, *requirements: str, constraints: Sequence[str] = ()) -> None:
        """``pip install`` into this environment, run by the test environment's pip."""
        args = [sys.executable, "-m", "pip", "--python", str(self.python), "install"]
        args += ["--quiet", "--no-compile", "--disable-pip-version-check"]
        if constraints:
            constraint_file = self.path / "constraints.txt"
            constraint_file.write_text("\n".join(constraints) + "\n")
            args += ["--constraint", str(constraint_file)]
        started = time.monotonic()
        done = subprocess.run(
            [*args, *requirements],
            capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=clean_env(),
        )
        self.install_seconds += time.monotonic() - started
        if done.returncode != 0:
            raise AssertionError(
                f"pip install {' '.join(requirements)} failed in {self.path}:\n{done.stderr[-4000:]}"
            )
        self.installed.extend(requirements)

    def site_packages(self) -> Path:
        (found,) = self.path.glob("lib/python*/site-packages")
        return found

    def distributions(self) -> dict[str, str]:
        """Installed distribution name -> version, read by the environment's own interpreter."""
        code = (
            "import json, importlib.metadata as m; "
            "print(json.dumps({d.metadata['Name'].lower(): d.version for d in m.distributions()}))"
        )
        return dict(json.loads(self.run(["-c", code]).stdout))

    def size_mb(self, relative: str = "") -> float:
        """Megabytes on disk of site-packages (or of one folder in it)."""
        root = self.site_packages() / relative
        total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())
        return total / 1e6

    def run(
        self,
        args: Sequence[str],
        *,
        program: str = "python",
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = RUN_TIMEOUT_S,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Run this environment's python (or another program of its bin/) with ``args``,
        from a folder outside the checkout."""
        command = [str(self.bin / program), *args]
        done = subprocess.run(
            command,
            capture_output=True, text=True, timeout=timeout,
            env=clean_env(env), cwd=cwd or self.path,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"{' '.join(command)} exited with {done.returncode}:\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
            )
        return done

    def summary(self, name: str) -> str:
        versions = self.distributions()
        shown = ", ".join(
            f"{dist} {versions[dist]}"
            for dist in ("connect-plugin", "pyspark", "pyspark-client", "protobuf", "pandas", "pyarrow", "grpcio")
            if dist in versions
        )
        return (
            f"{name}: {self.size_mb():.0f} MB in site-packages, installed in "
            f"{self.install_seconds:.0f} s ({shown})"
        )


INSTALL_REPORT: list[str] = []
"""Lines printed at the end of the run: what each environment holds and weighs."""


@dataclass(frozen=True)
class Dists:
    sdist: Path
    wheel: Path


class VenvCache:
    """Environments by name, each made and installed at most once per test session."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.made: dict[str, Venv] = {}

    def get(
        self,
        name: str,
        *requirements: str,
        constraints: Sequence[str] = (),
        then: Callable[[Venv], None] | None = None,
    ) -> Venv:
        if name not in self.made:
            venv = Venv(self.root / name.replace(" ", "-")).create()
            venv.install(*requirements, constraints=constraints)
            INSTALL_REPORT.append(venv.summary(name))
            if then is not None:
                then(venv)
            self.made[name] = venv
        return self.made[name]
