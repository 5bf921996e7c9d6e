"""Running upstream PyPTO's example programs unmodified from the snapshot, as a user runs
them (tests/upstream on the simulators, tests/device on the CPU models)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pypto.tools import upstream_compat
from pypto.tools.upstream_compat import Program

SNAPSHOT = upstream_compat.snapshot_root()


def with_platform(program: Program, platform: str) -> list[str]:
    """The program's arguments, its own platform flag set to `platform` where it has one."""
    args = list(program.args)
    source = (SNAPSHOT / program.path).read_text()
    if '"--platform"' in source and "--platform" not in args:
        args += ["--platform", platform]
    return args


def run_program(program: Program, platform: str, work_dir: Path, env: tuple = (),
                flag: str | None = None) -> subprocess.CompletedProcess:
    """Runs `program` unmodified from the snapshot, as a user would, on `platform` (its
    `PYPTO_PLATFORM`, and its own platform flag unless `flag` names another platform for
    it); `env` overrides the program's."""
    env = {**os.environ, "PYPTO_PLATFORM": platform, "PYPTO_WORK_DIR": str(work_dir),
           "PYTHONDONTWRITEBYTECODE": "1", **dict(program.env), **dict(env)}
    target = ["-m", program.path.removesuffix(".py").replace("/", ".")] if program.module \
        else [program.path]
    return subprocess.run([sys.executable, *target, *with_platform(program, flag or platform)],
                          cwd=SNAPSHOT, env=env, capture_output=True, text=True, timeout=900)


def assert_ended_as_expected(program: Program, result: subprocess.CompletedProcess) -> None:
    """`result` ended as `program` says: its located refusal, or exit 0 with its own
    success lines (printed after its torch comparisons) and the warnings it must give."""
    report = f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    if program.refused:
        assert result.returncode != 0, report
        for fragment in program.refused:
            assert fragment in result.stderr, report
        return
    assert result.returncode == 0, report
    lines = result.stdout.splitlines()
    for expected in program.expect:
        assert any(line.startswith(expected) for line in lines), report
    for fragment in program.stderr:
        assert fragment in result.stderr, report
