"""Differential fuzzing of control flow, windows and task graphs (fuzz_control.py).

Each generated program (a *case*: a loop nest over tiles, a carried accumulation, a chain
of tile views, or a task graph) is checked on a2a3sim and a5sim against its plain
reference, against `torch_codegen` of the lowered program on each, and the two sims
against each other: bit for bit, except outputs that end in a transcendental (2 ulps) or
in a cast some backend runs as a double rounding (1 unit) — `Case.tolerance`.  Cases are
packed into batches, one build per batch and platform.  The CI profile is derandomized;
`PYPTO_FUZZ_PROFILE=large` runs ten times as many batches, randomized:

    PYPTO_FUZZ_PROFILE=large python -m pytest tests/fuzz/test_fuzz_control.py -q
"""

from __future__ import annotations

from collections import Counter

import fuzz_control as fc
import pytest
from fuzz_runner import PROFILE, SCALE, run_program
from hypothesis import given, settings

# Per family in CI: (batches, cases per batch).  Tile cases share one kernel per batch;
# task cases build a kernel per task body, so they come in smaller batches.  "mixed"
# draws every family into one batch (tile and task cases in one orchestration).
BUDGET = {"tiles": (3, 30), "carry": (2, 24), "window": (3, 32), "matmul": (1, 12),
          "chain": (1, 4), "grid": (1, 4), "reuse": (1, 4), "block": (1, 4), "update": (1, 4),
          "scan": (1, 4), "deps": (1, 4), "splitk": (1, 4), "mixed": (1, 32)}

COUNTED: Counter = Counter()  # cases checked per family in this session
DISTINCT: set[str] = set()  # their sources, the case's own name left out


@pytest.mark.parametrize("family", sorted(BUDGET))
def test_generated_control_flow_programs_agree_everywhere(family, tmp_path):
    batches, cases = BUDGET[family]
    counted = Counter()
    families = tuple(fc.FAMILIES) if family == "mixed" else (family,)

    @settings(PROFILE, max_examples=batches * SCALE)
    @given(program=fc.programs((cases, cases), families))
    def check(program):
        outputs = run_program(fc, program, tmp_path)
        counted.update(batches=1, cases=len(program.cases), outputs=outputs)
        DISTINCT.update(fc.case_text(case) for case in program.cases)

    check()
    assert counted["batches"] == batches * SCALE
    assert counted["cases"] == batches * cases * SCALE
    COUNTED[family] = counted["cases"]


def test_the_ci_profile_checks_at_least_300_distinct_control_flow_programs():
    """Counted over the families above (run in the same session, before this test):
    hypothesis mutates earlier examples, so some cases repeat; they count once."""
    if sorted(COUNTED) != sorted(BUDGET):
        pytest.skip("run together with test_generated_control_flow_programs_agree_everywhere")
    assert len(DISTINCT) >= 300, (len(DISTINCT), COUNTED)
