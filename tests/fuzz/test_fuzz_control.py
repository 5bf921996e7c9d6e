"""Differential fuzzing of control flow, windows and task graphs (fuzz_control.py).

Each generated program (a *case*: a loop nest over tiles, a carried accumulation, a chain
of tile views, or a task graph) runs on a2a3sim and a5sim and through `torch_codegen` of
the lowered program on each: those four agree bit for bit.  Each is also checked against
its plain float64 reference: bit for bit, except outputs that end in `exp`/`log` (1 ulp)
or in a cast some backend runs as a double rounding (1 unit) — `Case.tolerance`.  Cases
are packed into batches, one build per batch and platform.  The default run (CI profile)
is derandomized; the slow run (`-m slow`) checks three times as many batches, other
programs, still derandomized; `PYPTO_FUZZ_PROFILE=large` runs ten times as many batches
in both, randomized:

    PYPTO_FUZZ_PROFILE=large python -m pytest tests/fuzz/test_fuzz_control.py -q -m slow
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import fuzz_control as fc
import pytest
from fuzz_runner import LARGE, PROFILE, SCALE, run_program
from hypothesis import given, seed, settings

# Per family in CI: (batches, cases per batch).  Tile cases share one kernel per batch;
# task cases build a kernel per task body, so they come in smaller batches.  "mixed"
# draws every family into one batch (tile and task cases in one orchestration).
BUDGET = {"tiles": (3, 30), "carry": (2, 24), "window": (3, 32), "matmul": (1, 12),
          "chain": (1, 4), "grid": (1, 4), "reuse": (1, 4), "block": (1, 4), "update": (1, 4),
          "scan": (1, 4), "deps": (1, 4), "splitk": (1, 4), "piped": (1, 4), "mixed": (1, 32)}

SLOW = 3  # the slow profile: three times the batches of each family
SLOW_SEED = 24  # ... drawn from a seed of its own, so they are other programs

COUNTED: Counter = Counter()  # cases checked per family in this session's default profile
DISTINCT: set[str] = set()  # their sources, the case's own name left out


def fuzz(family: str, batches: int, workdir, rng_seed: int | None = None) -> set[str]:
    """Runs `batches` generated batches of `family` everywhere (derandomized, or from
    `rng_seed`; randomized in the large profile); the distinct cases they checked."""
    cases = BUDGET[family][1]
    counted = Counter()
    distinct: set[str] = set()
    families = tuple(fc.FAMILIES) if family == "mixed" else (family,)

    @settings(PROFILE, max_examples=batches * SCALE)
    @given(program=fc.programs((cases, cases), families))
    def check(program):
        outputs = run_program(fc, program, workdir)
        counted.update(batches=1, cases=len(program.cases), outputs=outputs)
        distinct.update(fc.case_text(case) for case in program.cases)

    if rng_seed is not None and not LARGE:
        check = seed(rng_seed)(check)
    check()
    assert counted["batches"] == batches * SCALE
    assert counted["cases"] == batches * cases * SCALE
    return distinct


@pytest.mark.parametrize("family", sorted(BUDGET))
def test_generated_control_flow_programs_agree_everywhere(family, tmp_path):
    DISTINCT.update(fuzz(family, BUDGET[family][0], tmp_path))
    COUNTED[family] = BUDGET[family][0] * BUDGET[family][1] * SCALE


def test_the_ci_profile_checks_at_least_300_distinct_control_flow_programs():
    """Counted over the families above (run in the same session, before this test):
    hypothesis mutates earlier examples, so some cases repeat; they count once."""
    if sorted(COUNTED) != sorted(BUDGET):
        pytest.skip("run together with test_generated_control_flow_programs_agree_everywhere")
    assert len(DISTINCT) >= 300, (len(DISTINCT), COUNTED)


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(BUDGET))
def test_a_larger_profile_of_control_flow_programs_agrees_everywhere(family, tmp_path):
    batches, cases = BUDGET[family]
    distinct = fuzz(family, SLOW * batches, tmp_path, rng_seed=SLOW_SEED)
    # Mutated examples repeat some cases; most are new.
    assert len(distinct) > SLOW * batches * cases * SCALE // 2


SCHEDULE_SEEDS = (0, 1, 7, 12345)


def test_split_k_cases_agree_under_every_seeded_schedule(tmp_path):
    """Atomic partial sums land in a different order under each seed (one task at a time
    in a seeded order, the race detector on): every order gives the same bits."""
    ran = Counter()

    @settings(PROFILE, max_examples=SCALE)
    @given(program=fc.programs(BUDGET["splitk"][1:] * 2, ("splitk",)))
    def check(program):
        for schedule in SCHEDULE_SEEDS:
            run_program(fc, replace(program, schedule_seed=schedule, detect_races=True),
                        tmp_path)
            ran[schedule] += len(program.cases)

    check()
    assert sorted(ran) == sorted(SCHEDULE_SEEDS)
    assert set(ran.values()) == {BUDGET["splitk"][1] * SCALE}
