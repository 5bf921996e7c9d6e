"""Helpers for the kernel library tests: the shipped spec modules of this checkout, a copy of
the project and `scons` run in it (a uniquely named module, so that it never collides with
another test directory's helpers in one pytest session)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLATFORMS = ("a2a3sim", "a5sim")


def shipped_specs(module: str) -> list:
    """The spec kernels of kernels/<module>.py of this checkout, imported the way the build
    imports them (as `kernels.<module>` with this checkout's top first on sys.path, even
    after another test imported some other project's `kernels` package)."""
    from pypto.spec.module import specs_of

    return specs_of(ROOT / "kernels" / f"{module}.py", ROOT)


def spec_modules() -> list[str]:
    """The spec modules of the shipped library (helpers start with an underscore)."""
    return sorted(p.stem for p in (ROOT / "kernels").glob("[!_]*.py"))


@dataclass
class LibraryBuild:
    """A built copy of the project: `root/build/` holds both platforms' artifacts, the
    goldens and the check results; `output[p]` is what `scons platform=p check` printed."""

    root: Path
    output: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def build(self) -> Path:
        return self.root / "build"

    def golden(self, kernel: str, variant: str) -> Path:
        return self.build / "goldens" / kernel / variant

    def artifact(self, platform: str, kernel: str, variant: str) -> Path:
        return self.build / platform / kernel / variant


def copy_project(root: Path) -> Path:
    """SConstruct and kernels/ of this checkout (no caches) under `root`."""
    root.mkdir(parents=True)
    shutil.copy(ROOT / "SConstruct", root / "SConstruct")
    shutil.copytree(ROOT / "kernels", root / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


def scons(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")]).rstrip(os.pathsep))
    return subprocess.run([sys.executable, "-m", "SCons", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
