"""A user's own kernel project: `pypto new` writes it, the SCons tool shipped in the
package builds it (three-line SConstruct), and the build talks to its user in one line
when asked for a platform that does not exist, in `[N/M]` steps otherwise."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pypto.platform import platform_names
from pypto.tools import cli

ROOT = Path(__file__).resolve().parents[2]

SPEC = '''"""A user's spec: out = x * 2."""

import pypto.language as pl
from pypto import spec


@pl.jit
def twice(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(x, 2.0)
    return out


SPECS = [
    spec.Kernel(
        twice,
        variants={"f32_16x64": {"x": ("fp32", [16, 64]), "out": ("fp32", [16, 64])}},
        inputs=lambda rng, v: {"x": rng.normal(v.x)},
        reference=lambda x: x.double() * 2,
        tolerance=spec.Exact("doubling is exact"),
    ),
]
'''


def scons(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYPTO_CACHE_DIR=str(project.parent / "cache"))
    return subprocess.run([sys.executable, "-m", "SCons", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture
def project(tmp_path, capsys) -> Path:
    root = tmp_path / "my_kernels"
    assert cli.main(["new", str(root)]) == 0
    assert "created kernel project my_kernels" in capsys.readouterr().out
    return root


def test_pypto_new_writes_a_sconstruct_of_three_statements_and_a_kernels_package(project):
    assert sorted(p.relative_to(project).as_posix() for p in project.rglob("*")) == [
        ".gitignore", "SConstruct", "kernels", "kernels/__init__.py"]
    code = [line for line in (project / "SConstruct").read_text().split('"""')[-1].splitlines()
            if line.strip()]
    assert code == [
        "import pypto.scons",
        'env = Environment(tools=["pypto"], toolpath=[pypto.scons.toolpath()])',
        'env.KernelLibrary("my_kernels", version="0.1.0", specs=Glob("kernels/*.py"))',
    ]


def test_a_new_project_with_a_spec_builds_checks_and_packages_in_numbered_steps(project):
    (project / "kernels" / "twice.py").write_text(SPEC)
    proc = scons(project, "platform=a5sim", "check", "package")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 of 1 outputs of 1 kernel variants within tolerance" in proc.stdout
    assert (project / "dist" / "my_kernels-0.1.0-a5sim.tar").is_file()
    steps = [(int(n), int(m)) for n, m in re.findall(r"^pypto: \[(\d+)/(\d+)\] ", proc.stdout,
                                                      re.M)]
    # spec, golden, plan, artifact, check, index, package: each numbered out of all
    # seven (its compile and link steps are not numbered: its plan adds them)
    reached = [n for n, _ in steps]
    assert reached == sorted(reached) and reached[-1] == 7
    assert {m for _, m in steps} == {7}


def test_a_mistyped_platform_ends_with_one_line_naming_the_valid_ones(project):
    proc = scons(project, "platform=a5sm", "check")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"scons: *** unknown platform 'a5sm'; choose one of: {', '.join(platform_names())}"]


def test_scons_help_lists_the_tools_variables(project):
    proc = scons(project, "-h")
    assert proc.returncode == 0, proc.stderr
    assert "platform:" in proc.stdout and "cache:" in proc.stdout


def test_pypto_new_refuses_a_directory_that_is_not_empty(project, capsys):
    assert cli.main(["new", str(project)]) == 2
    assert "is not an empty directory" in capsys.readouterr().err
    assert not (project / "kernels" / "twice.py").exists()


def test_pypto_new_refuses_a_name_that_cannot_name_a_package(tmp_path, capsys):
    assert cli.main(["new", str(tmp_path / "lib"), "--name", "my kernels"]) == 2
    assert "letters, digits and _.+-" in capsys.readouterr().err
    assert not (tmp_path / "lib").exists()
