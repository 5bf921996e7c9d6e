"""pypto as an installed toolkit, end to end, outside any checkout: the wheel built from
this checkout is installed into a fresh virtual environment, where `pypto new` makes a
project that builds, checks and packages; the package then loads and checks in a third
environment without any C++ compiler on PATH and with a read-only cache, on the native
scheduler that came with the wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TORCH = "torch==2.13.0"  # the CPU wheel, as the README installs it
COMPILERS = ("g++", "gcc", "cc", "c++", "clang", "clang++")

SPEC = '''"""A user's spec: out = (a + b) * 2, in two shapes."""

import pypto.language as pl
from pypto import spec


@pl.jit
def add_twice(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.add(a, b), 2.0)
    return out


def _inputs(rng, v):
    return {"a": rng.normal(v.a), "b": rng.normal(v.b)}


SPECS = [
    spec.Kernel(
        add_twice,
        variants={
            "f32_32x64": {"a": ("fp32", [32, 64]), "b": ("fp32", [32, 64]),
                          "out": ("fp32", [32, 64])},
            "f32_7x33": {"a": ("fp32", [7, 33]), "b": ("fp32", [7, 33]),
                         "out": ("fp32", [7, 33])},
        },
        inputs=_inputs,
        reference=lambda a, b: (a.float() + b.float()).double() * 2,
        tolerance=spec.Exact("the FP32 sum is rounded as the kernel rounds it; doubling is exact"),
    ),
]
'''

DEPLOYED = '''
import os, shutil, sys, warnings
warnings.simplefilter("error")  # a NativeSchedulerWarning (no native scheduler) fails this
import torch
import pypto
from pypto.runtime import load_library, native
assert not any(shutil.which(c) for c in {compilers!r}), "a compiler is on PATH"
assert "site-packages" in pypto.__file__, pypto.__file__
library = load_library(sys.argv[1], platform="a5sim", allow_unsigned=True)  # built unsigned
table = library.check()  # PYPTO_SCHEDULER=native: a run on the Python scheduler would raise
assert table.passed and len(table.rows) == 2, str(table)
assert native.unavailable_reason() is None
program = library["add_twice"]["f32_7x33"].load()
a, b, out = torch.randn(7, 33), torch.randn(7, 33), torch.empty(7, 33)
program.run([a, b, out])
assert torch.equal(out, (a + b) * 2)
print("engine", program.last_schedule.engine)
'''


def run(command: list[str], **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(command, capture_output=True, text=True, timeout=1200, check=False,
                          **kw)
    assert proc.returncode == 0, f"{' '.join(command)}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("PYPTO_")}
    return {**env, **extra}


def fresh_venv(path: Path, wheel: Path) -> Path:
    """A new virtual environment with torch's CPU wheel and pypto's wheel; its bin/."""
    run([sys.executable, "-m", "venv", str(path)])
    pip = [str(path / "bin" / "python"), "-m", "pip", "install", "--quiet",
           "--disable-pip-version-check"]
    run([*pip, TORCH], env=clean_env())
    run([*pip, str(wheel)], env=clean_env())
    return path / "bin"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of a copy of this checkout (so its build leaves the checkout alone)."""
    source = tmp_path_factory.mktemp("source") / "pypto"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "*.so", ".pytest_cache",
        ".ruff_cache", ".hypothesis", "dfx_outputs"))
    out = tmp_path_factory.mktemp("wheels")
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-w", str(out), str(source)], env=clean_env())
    (found,) = out.glob("pypto-*.whl")
    return found


@pytest.mark.slow
def test_a_user_project_builds_from_the_installed_wheel_and_runs_where_no_compiler_is(
        wheel, tmp_path):
    # The user's machine: a fresh environment, a project made by `pypto new`, one spec.
    user_bin = fresh_venv(tmp_path / "user-venv", wheel)
    work = tmp_path / "work"
    work.mkdir()
    user_env = clean_env(PATH=f"{user_bin}{os.pathsep}{os.environ['PATH']}",
                         PYPTO_CACHE_DIR=str(tmp_path / "user-cache"))
    run([str(user_bin / "pypto"), "new", "my_kernels"], cwd=work, env=user_env)
    project = work / "my_kernels"
    (project / "kernels" / "add_twice.py").write_text(SPEC)
    proc = run([str(user_bin / "scons"), "platform=a5sim", "check", "package"], cwd=project,
               env=user_env)
    assert "2 of 2 outputs of 2 kernel variants within tolerance" in proc.stdout
    package = project / "dist" / "my_kernels-0.1.0-a5sim.tar"
    assert package.is_file()

    # A deployment machine: another fresh environment, no compiler on PATH (its bin/ holds
    # python, pip and pypto's scripts only), a cache no one may write.
    deploy_bin = fresh_venv(tmp_path / "deploy-venv", wheel)
    assert not any(shutil.which(c, path=str(deploy_bin)) for c in COMPILERS)
    cache = tmp_path / "deploy-cache"
    cache.mkdir()
    cache.chmod(0o555)
    deploy_env = {"PATH": str(deploy_bin), "HOME": str(tmp_path / "home"),
                  "PYPTO_CACHE_DIR": str(cache), "PYPTO_SCHEDULER": "native",
                  "TMPDIR": str(tmp_path)}
    script = tmp_path / "deployed.py"
    script.write_text(DEPLOYED.format(compilers=COMPILERS))
    proc = run([str(deploy_bin / "python"), str(script), str(package)], cwd=tmp_path,
               env=deploy_env)
    assert proc.stdout.strip() == "engine native"
    assert list(cache.iterdir()) == []  # root ignores the mode: nothing was written there
