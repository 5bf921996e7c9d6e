"""Differential fuzzing: generated programs agree on a2a3sim, a5sim, torch_codegen and a
plain torch reference (bit for bit where the operators are exact).

Each hypothesis example is one program of several independent lanes; every lane is one
checked example, so a few g++ builds check hundreds of expressions.  The default run
checks one program of each kind; the slow run (`-m slow`, in CI) the CI budget, thirty
programs.  Both are derandomized (same programs every run); `PYPTO_FUZZ_PROFILE=large`
runs ten times the CI budget, randomized, with hypothesis's example database:

    PYPTO_FUZZ_PROFILE=large python -m pytest tests/fuzz -q -m slow
"""

from __future__ import annotations

from collections import Counter

import fuzz_programs as fp
import pytest
from fuzz_runner import PLATFORMS, PROFILE, SCALE, run_program
from hypothesis import given, settings

# Programs per kind in CI, and the fewest lanes each kind must have checked.
BUDGET = {"tile": 8, "tensor": 6, "partial": 7, "loop": 4, "tasks": 5}
LANES = (10, 14)  # lanes per program: 30 programs check at least 300 lanes, 360 on average


TOTALS: Counter = Counter()  # programs, lanes and outputs checked in this session
KINDS_RUN: list[str] = []


def fuzz(kind: str, examples: int, workdir) -> Counter:
    """Runs `examples` generated programs of `kind` everywhere; what they checked."""
    counted = Counter()

    @settings(PROFILE, max_examples=examples)
    @given(program=fp.programs(kind, LANES))
    def check(program):
        outputs = run_program(fp, program, workdir)
        counted.update(programs=1, lanes=len(program.lanes), outputs=outputs)

    check()
    assert counted["programs"] == examples
    assert counted["lanes"] >= LANES[0] * examples
    return counted


@pytest.mark.parametrize("kind", sorted(BUDGET))
def test_a_generated_program_of_each_kind_agrees_everywhere(kind, tmp_path):
    fuzz(kind, 1, tmp_path)


@pytest.mark.slow  # 30 programs, a build and six runs each
@pytest.mark.parametrize("kind", sorted(BUDGET))
def test_generated_programs_agree_everywhere(kind, tmp_path):
    TOTALS.update(fuzz(kind, BUDGET[kind] * SCALE, tmp_path))
    KINDS_RUN.append(kind)


@pytest.mark.slow
def test_the_ci_profile_checks_at_least_300_lanes():
    """Counted over the kinds above (run in the same session, before this test)."""
    if sorted(KINDS_RUN) != sorted(BUDGET):
        pytest.skip("run together with test_generated_programs_agree_everywhere")
    assert TOTALS["lanes"] >= 300, TOTALS


def test_the_generated_casts_are_legal_on_both_backends():
    from pypto.ir.dtypes import DataType
    from pypto.passes.legalize_tile_cast import cast_path
    from pypto.platform import get_platform

    backends = [get_platform(p).backend for p in PLATFORMS]
    for src, dsts in fp.CASTS.items():
        for dst in dsts:
            paths = [cast_path(DataType[src], DataType[dst], b) for b in backends]
            rounds_twice = any(len(p) > 2 and (src, dst) not in _EXACT_CHAINS for p in paths)
            assert rounds_twice == ((src, dst) in fp.DOUBLE_ROUNDING), (src, dst, paths)


# Multi-hop chains whose intermediates hold every value that matters (docs/numerics.md):
# they round once, like a direct conversion, with every mode.
_EXACT_CHAINS = {
    ("FP16", "BF16"), ("BF16", "FP16"), ("INT32", "FP16"), ("INT32", "INT8"), ("INT16", "BF16"),
    ("INT16", "INT8"), ("BF16", "INT16"), ("BF16", "INT8"),
}
