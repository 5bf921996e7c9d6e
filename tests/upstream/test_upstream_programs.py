"""Users' existing PyPTO programs, run unmodified from the upstream snapshot.

Each program of `pypto-upstream/examples` runs in its own interpreter, as a user runs it
(`cd pypto-upstream && python examples/beginner/01_hello_world.py`), and must end the way
its own code says it succeeded: its torch comparisons are `assert`s followed by a final
`print("OK")` (or the lines its `__main__` prints after lowering), so the printed lines
prove the comparisons ran.  A program that cannot run here must stop with the located
refusal docs/upstream-compat.md lists, naming its file and line.

The snapshot is found at `$PYPTO_UPSTREAM_ROOT`, else `../shared/third_party/pypto-upstream`
beside the checkout; without it the tests skip, saying so.  Platforms: a2a3sim by default;
`PYPTO_UPSTREAM_PLATFORMS=a2a3sim,a5sim` also runs every program on a5sim, through
`PYPTO_PLATFORM` (the default platform of `RunConfig()`) and the programs' own `-p` flags.
A representative program per tier runs by default; the rest carry `@pytest.mark.slow`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = Path(os.environ.get("PYPTO_UPSTREAM_ROOT")
                or ROOT.parent / "shared" / "third_party" / "pypto-upstream")
PLATFORMS = tuple(p for p in os.environ.get("PYPTO_UPSTREAM_PLATFORMS", "a2a3sim").split(",")
                  if p)

pytestmark = pytest.mark.skipif(
    not (SNAPSHOT / "examples").is_dir(),
    reason=f"the upstream PyPTO snapshot is absent (looked for {SNAPSHOT}/examples); set "
           "PYPTO_UPSTREAM_ROOT to a checkout of hw-native-sys/pypto to run these tests")


@dataclass(frozen=True)
class Program:
    """One run of an upstream program and how it must end.

    `expect`: lines its stdout must hold (its success lines); `refused`: instead, the
    fragments its stderr must hold (the located refusal) with a non-zero exit.
    """

    path: str
    args: tuple = ()
    expect: tuple = ("OK",)
    refused: tuple = ()
    slow: bool = True
    module: bool = False  # run as `python -m` (a package with relative imports)

    @property
    def id(self) -> str:
        return self.path.removeprefix("examples/").removesuffix(".py") + "".join(
            f"[{a}]" for a in self.args if not a.startswith("-"))


CORE = [
    Program("examples/beginner/01_hello_world.py", slow=False),
    Program("examples/beginner/02_elementwise.py"),
    Program("examples/beginner/03_scalar_ops.py"),
    Program("examples/beginner/04_activation.py"),
    Program("examples/beginner/05_matmul.py"),
    Program("examples/beginner/06_concat.py"),
    Program("examples/intermediate/01_fused_linear.py"),
    Program("examples/intermediate/02_softmax.py"),
    Program("examples/intermediate/03_normalization.py"),
    Program("examples/intermediate/04_matmul_acc.py"),
    # Its first kernel moves a Mat tile to Vec: no such PTO data path (upstream lowers it
    # to a TPUSH/TPOP cross-core transfer, which this project does not model).
    Program("examples/intermediate/05_assemble.py",
            refused=("05_assemble.py:82", "pl.move from Mat to Vec is not a data path")),
    Program("examples/intermediate/06_dyn_valid_shape.py",
            expect=("dyn_valid_shape (full): 2 fn(s)", "dyn_valid_shape (partial): 2 fn(s)",
                    "dyn_valid_shape_if_else: 2 fn(s)", "dyn_valid_shape_loop: 2 fn(s)",
                    "OK")),
    Program("examples/intermediate/07_task_graph.py"),
    Program("examples/advanced/01_split_k.py"),
    Program("examples/advanced/02_auto_tile_matmul.py"),
    Program("examples/advanced/03_mixed_kernel.py", ("--mode", "mixed"), slow=False),
    Program("examples/advanced/03_mixed_kernel.py", ("--mode", "staged")),
    Program("examples/advanced/03_mixed_kernel.py", ("--mode", "left_right")),
]

PROGRAMS = CORE


def _params(programs):
    for platform in PLATFORMS:
        for program in programs:
            marks = [pytest.mark.slow] if program.slow or platform != "a2a3sim" else []
            yield pytest.param(program, platform, id=f"{program.id}-{platform}", marks=marks)


def _with_platform(program: Program, platform: str) -> list[str]:
    """The program's arguments, its own platform flag set to `platform` where it has one."""
    args = list(program.args)
    source = (SNAPSHOT / program.path).read_text()
    if '"--platform"' in source and "--platform" not in args:
        args += ["--platform", platform]
    return args


def run_program(program: Program, platform: str, work_dir: Path) -> subprocess.CompletedProcess:
    """Runs `program` unmodified from the snapshot, as a user would."""
    env = dict(os.environ, PYPTO_PLATFORM=platform, PYPTO_WORK_DIR=str(work_dir),
               PYTHONDONTWRITEBYTECODE="1")
    target = ["-m", program.path.removesuffix(".py").replace("/", ".")] if program.module \
        else [program.path]
    return subprocess.run([sys.executable, *target, *_with_platform(program, platform)],
                          cwd=SNAPSHOT, env=env, capture_output=True, text=True, timeout=900)


def _platform_switch_available(platform: str) -> bool:
    """Whether `PYPTO_PLATFORM` sets `RunConfig()`'s platform (a2a3sim needs no switch)."""
    if platform == "a2a3sim":
        return True
    import pypto.platform

    return hasattr(pypto.platform, "default_platform")


@pytest.mark.parametrize("program, platform", list(_params(PROGRAMS)))
def test_upstream_program_runs_unmodified(program: Program, platform: str, tmp_path):
    if not _platform_switch_available(platform):
        pytest.skip(f"RunConfig() cannot be pointed at {platform}: the PYPTO_PLATFORM switch "
                    "is not in this checkout")
    result = run_program(program, platform, tmp_path)
    report = f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    if program.refused:
        assert result.returncode != 0, report
        for fragment in program.refused:
            assert fragment in result.stderr, report
        return
    assert result.returncode == 0, report
    lines = result.stdout.splitlines()
    for line in program.expect:
        assert line in lines, report
