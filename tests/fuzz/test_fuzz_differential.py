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

import hashlib
import importlib.util
import os
import warnings
from collections import Counter

import fuzz_programs as fp
import fuzz_reference as ref
import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings

from pypto.debug import load_entry, torch_codegen
from pypto.ir.diagnostics import PyptoPerfHint
from pypto.runtime import RunConfig

PLATFORMS = ("a2a3sim", "a5sim")
LARGE = os.environ.get("PYPTO_FUZZ_PROFILE", "ci") == "large"
SCALE = 10 if LARGE else 1

settings.register_profile(
    "pypto-fuzz",
    # No deadline: a build takes seconds on a loaded 2-core machine, and that is not a bug.
    deadline=None,
    derandomize=not LARGE,
    database=None if not LARGE else settings.default.database,
    # Shrinking rebuilds every candidate (seconds each): CI reports the failing program
    # as generated, with its source; the large profile shrinks it.
    phases=list(Phase) if LARGE else [Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
    print_blob=True,
)

# Programs per kind in CI, and the fewest lanes each kind must have checked.
BUDGET = {"tile": 8, "tensor": 6, "partial": 7, "loop": 4, "tasks": 5}
LANES = (10, 14)  # lanes per program: 30 programs check at least 300 lanes, 360 on average


TOTALS: Counter = Counter()  # programs, lanes and outputs checked in this session
KINDS_RUN: list[str] = []


def _import(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _arguments(program: fp.Program, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    """Fresh arguments in signature order: input copies, outputs poisoned."""
    args = []
    for name, shape, dtype, is_output in fp.parameters(program):
        if is_output:
            poison = torch.full(shape, 99, dtype=ref.TORCH[dtype])
            args.append(poison)
        else:
            args.append(inputs[name].clone())
    return args


def _outputs(program: fp.Program, args) -> dict[str, torch.Tensor]:
    return {name: arg for (name, _, _, is_output), arg in zip(fp.parameters(program), args)
            if is_output}


def _tolerances(program: fp.Program) -> dict[str, int]:
    tol = {lane.name: lane.tolerance for lane in program.lanes}
    tol.update({f"{lane.name}_acc": lane.tolerance for lane in program.lanes})
    return tol


def run_program(program: fp.Program, workdir) -> Counter:
    """Builds and runs `program` everywhere; asserts agreement; counts what it checked."""
    source = fp.render(program)
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    path = workdir / f"fuzz_{program.kind}_{digest}.py"
    path.write_text(source)
    module = _import(str(path), f"fuzz_{program.kind}_{digest}")
    inputs = fp.make_inputs(program)
    expected = fp.evaluate(program, inputs)
    tolerance = _tolerances(program)
    dtypes = {name: dtype for name, _, dtype, _ in fp.parameters(program)}
    results = {}
    failures = []

    def check(what: str, got: dict, want: dict) -> None:
        for name, value in want.items():
            problem = ref.mismatch(got[name], value, dtypes[name], tolerance[name])
            if problem:
                failures.append(f"{what}, output {name}: {problem}")

    for platform in PLATFORMS:
        config = RunConfig(platform=platform, workers=program.workers,
                           schedule_seed=program.schedule_seed)
        args = _arguments(program, inputs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PyptoPerfHint)
            module.fuzz_kernel(*args, config=config)
            lowered = module.fuzz_kernel.lower(*args, config=config)
        sim = _outputs(program, args)
        results[platform] = sim
        torch_args = _arguments(program, inputs)
        load_entry(torch_codegen(lowered), lowered.entry)(*torch_args)
        check(f"{platform} vs torch_codegen", _outputs(program, torch_args), sim)
        check(f"{platform} vs the plain reference", sim, expected)
    check("a5sim vs a2a3sim", results["a5sim"], results["a2a3sim"])
    if failures:
        lanes = "\n".join(f"  {lane}" for lane in program.lanes)
        pytest.fail(f"{len(failures)} disagreements in {path} (input seed {program.seed}):\n"
                    + "\n".join(failures[:12]) + f"\n--- source ---\n{source}\n--- lanes ---\n"
                    + lanes)
    return Counter(programs=1, lanes=len(program.lanes), outputs=len(expected))


def fuzz(kind: str, examples: int, workdir) -> Counter:
    """Runs `examples` generated programs of `kind` everywhere; what they checked."""
    counted = Counter()

    @settings(settings.get_profile("pypto-fuzz"), max_examples=examples)
    @given(program=fp.programs(kind, LANES))
    def check(program):
        counted.update(run_program(program, workdir))

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
