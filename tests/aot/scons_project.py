"""Kernel library projects for the build tests: this checkout's SConstruct (which loads the
tool shipped in the package, pypto.scons) with the shipped or synthetic specs, built by
real `python -m SCons` runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A wrapper around the real g++ that appends one line per compile to $CXX_CALL_LOG.  Its path
# is fixed per session: PYPTO_CXX is part of every content key.
COUNTING_CXX = """#!/bin/sh
if [ "$1" != "--version" ] && [ -n "$CXX_CALL_LOG" ]; then
    echo "$*" >> "$CXX_CALL_LOG"
fi
exec g++ "$@"
"""

# Shadows torch for a process that must not import it (a no-op build).
TORCH_BLOCKER = 'raise ImportError("torch was imported by a build that had nothing to do")\n'

SYNTHETIC_SPEC = '''"""Synthetic spec {i}."""

import pypto.language as pl
from pypto import spec
{helper_import}
SCALE = {scale}


@pl.jit
def scale(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, SCALE)
    return out


SPECS = [
    spec.Kernel(
        scale,
        name="k{i:02d}",
        variants={{"v": {{"a": ("fp32", {shape}), "out": ("fp32", {shape})}}}},
        inputs=lambda rng, v: {{"a": rng.normal(v.a)}},
        reference=lambda a: a.double() * SCALE,
        tolerance=spec.Exact("one FP32 rounding of the product, as the reference's cast"),
    )
]
'''

SHAPES_HELPER = '''"""Shapes shared by some synthetic specs."""

SHAPE = [8, 48]
'''


class Project:
    """A copy of a kernel library project, built by real `python -m SCons` subprocesses."""

    def __init__(self, root: Path, cache: Path, cxx: Path, log: Path,
                 package_root: Path = ROOT) -> None:
        self.root = root
        self.cache = cache
        self.cxx = cxx
        self.log = log
        self.package_root = package_root  # where its builds import pypto from

    @property
    def build(self) -> Path:
        return self.root / "build"

    def env(self, block_torch: Path | None = None, **extra: str) -> dict[str, str]:
        path = [str(block_torch)] if block_torch else []
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([*path, str(self.package_root)]),
                   PYPTO_CACHE_DIR=str(self.cache), PYPTO_CXX=str(self.cxx),
                   CXX_CALL_LOG=str(self.log))
        env.update(extra)
        return env

    def popen(self, *args: str, block_torch: Path | None = None, **extra: str):
        return subprocess.Popen(
            [sys.executable, "-m", "SCons", *args], cwd=self.root,
            env=self.env(block_torch, **extra), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)

    def scons(self, *args: str, ok: bool = True, block_torch: Path | None = None,
              **extra: str) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [sys.executable, "-m", "SCons", *args], cwd=self.root, check=False,
            env=self.env(block_torch, **extra), capture_output=True, text=True, timeout=300)
        if ok and proc.returncode != 0:
            raise AssertionError(f"scons {' '.join(args)} failed ({proc.returncode}):\n"
                                 f"{proc.stdout}\n{proc.stderr}")
        return proc

    def compiles(self) -> list[str]:
        """Every compile of a source logged so far, links left out (the runtime never
        compiles: its native scheduler comes with the package)."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [line for line in lines if "-c" in line.split()]

    def copy(self, root: Path) -> Project:
        """A copy of the project (with its build directory) sharing this cache."""
        shutil.copytree(self.root, root, symlinks=True)
        return Project(root, self.cache, self.cxx, root.parent / f"{root.name}-cxx.log",
                       self.package_root)


def actions(output: str, kind: str) -> list[str]:
    """What the build printed for one kind of step (`plan`, `artifact`, `golden`,
    `spec`, `check`): e.g. ["k03/v for a5sim"] (without the progress label `[N/M]`)."""
    step = re.compile(rf"pypto: (?:\[\d+/\d+\] )?{kind} (.*)")
    return sorted(m[1] for m in map(step.fullmatch, output.splitlines()) if m)


def new_project(root: Path, cache: Path, cxx: Path, *, shipped: bool = False,
                modules: tuple[str, ...] | None = None, specs: int = 0,
                distinct: bool = False, helper_users: int = 0) -> Project:
    """A project at `root`: this checkout's SConstruct, with the shipped kernels/ (only
    the spec modules named in `modules`, when given, with every helper) or `specs`
    synthetic specs (one variant each; the first `helper_users` take their shape from
    kernels/_shapes.py; `distinct` gives each its own IR)."""
    root.mkdir(parents=True)
    shutil.copy(ROOT / "SConstruct", root / "SConstruct")
    if shipped:
        left_out = [] if modules is None else [
            p.name for p in (ROOT / "kernels").glob("[!_]*.py") if p.stem not in modules]
        shutil.copytree(ROOT / "kernels", root / "kernels",
                        ignore=shutil.ignore_patterns("__pycache__", *left_out))
    else:
        write_synthetic(root / "kernels", specs, distinct=distinct, helper_users=helper_users)
    return Project(root, cache, cxx, root.parent / f"{root.name}-cxx.log")


def write_synthetic(kernels: Path, specs: int, *, distinct: bool = False,
                    helper_users: int = 0) -> None:
    kernels.mkdir(parents=True, exist_ok=True)
    (kernels / "__init__.py").write_text('"""Synthetic kernels."""\n')
    (kernels / "_shapes.py").write_text(SHAPES_HELPER)
    for i in range(specs):
        uses_helper = i < helper_users
        (kernels / f"k{i:02d}.py").write_text(SYNTHETIC_SPEC.format(
            i=i,
            scale=1.0 + i / 8 if distinct else 2.0,
            helper_import="from kernels._shapes import SHAPE\n" if uses_helper else "",
            shape="SHAPE" if uses_helper else "[8, 32]",
        ))
