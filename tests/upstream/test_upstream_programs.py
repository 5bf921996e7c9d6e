"""Users' existing PyPTO programs, run unmodified from the upstream snapshot.

Each program of `pypto-upstream/examples` runs in its own interpreter, as a user runs it
(`cd pypto-upstream && python examples/beginner/01_hello_world.py`), and must end the way
its own code says it succeeded: its torch comparisons are `assert`s followed by a final
`print("OK")` (or the lines its `__main__` prints after lowering), so the printed lines
prove the comparisons ran.  A program that cannot run here must stop with the located
refusal docs/upstream-compat.md lists, naming its file and line.  The table of programs
and how each ends is `pypto.tools.upstream_compat.PROGRAMS`, which the page is generated
from.

The snapshot is found at `$PYPTO_UPSTREAM_ROOT`, else
`../shared/third_party/pypto-upstream` beside the checkout; without it the tests skip,
saying so.  Every program runs on a2a3sim and on a5sim, through `PYPTO_PLATFORM` (the default
platform of `RunConfig()`) and the programs' own `--platform` flags
(`PYPTO_UPSTREAM_PLATFORMS=a2a3sim` narrows the list).  A program that names its platform
or backend itself, with no flag to change it, is skipped on the other one, saying so.  A
representative program per tier runs on a2a3sim by default; the rest carry
`@pytest.mark.slow`.
"""

from __future__ import annotations

import os

import pytest
from upstream_runs import SNAPSHOT, assert_ended_as_expected, run_program

from pypto.tools import upstream_compat
from pypto.tools.upstream_compat import Program

PLATFORMS = tuple(p for p in os.environ.get("PYPTO_UPSTREAM_PLATFORMS", "a2a3sim,a5sim").split(",")
                  if p)

pytestmark = pytest.mark.skipif(
    not (SNAPSHOT / "examples").is_dir(),
    reason=f"the upstream PyPTO snapshot is absent (looked for {SNAPSHOT}/examples); set "
           "PYPTO_UPSTREAM_ROOT to a checkout of hw-native-sys/pypto to run these tests")


PROGRAMS = upstream_compat.PROGRAMS


def _params(programs):
    for platform in PLATFORMS:
        for program in programs:
            marks = [pytest.mark.slow] if program.slow or platform != "a2a3sim" else []
            yield pytest.param(program, platform, id=f"{program.id}-{platform}", marks=marks)


def _names_its_platform(program: Program, platform: str) -> str | None:
    """The platform a program names itself (`RunConfig(platform="a2a3sim")`, or its
    backend: `backend_type=BackendType.Ascend910B`) when it is not `platform` and no flag
    of the program changes it, else None."""
    source = (SNAPSHOT / program.path).read_text()
    if '"--platform"' in source:
        return None
    for name, backend in (("a2a3sim", "Ascend910B"), ("a5sim", "Ascend950")):
        if name != platform and (f'platform="{name}"' in source
                                 or f"backend_type=BackendType.{backend}" in source):
            return name
    return None


@pytest.mark.parametrize("program, platform", list(_params(PROGRAMS)))
def test_upstream_program_runs_unmodified(program: Program, platform: str, tmp_path):
    named = _names_its_platform(program, platform)
    if named is not None:
        pytest.skip(f"{program.path} names its platform or backend itself (no flag changes "
                    f"it): it runs on {named} whatever PYPTO_PLATFORM says")
    result = run_program(program, platform, tmp_path)
    assert_ended_as_expected(program, result)
