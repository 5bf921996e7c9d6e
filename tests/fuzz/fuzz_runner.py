"""Runs a generated program everywhere and compares: both simulators, `torch_codegen` of
the lowered program on each, and the plain reference.  The simulators and `torch_codegen`
must agree bit for bit (any NaN matches any NaN); the reference (float64, rounded as
docs/numerics.md says) within each output's stated tolerance (`gen.tolerances`).

`gen` is a generator module (`fuzz_programs` or `fuzz_control`): `render`, `parameters`,
`make_inputs`, `evaluate`, `tolerances`; the program carries `kind`, `seed`, `workers`,
`schedule_seed` and `detect_races`.  A build or run that raises, or a diagnostic warning
(perf hints aside), fails with the program's source, like a disagreement.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import warnings
from pathlib import Path

import fuzz_reference as ref
import pytest
import torch
from hypothesis import HealthCheck, Phase, settings

from pypto.debug import load_entry, torch_codegen
from pypto.ir.diagnostics import PyptoPerfHint, PyptoWarning
from pypto.runtime import RunConfig

PLATFORMS = ("a2a3sim", "a5sim")
LARGE = os.environ.get("PYPTO_FUZZ_PROFILE", "ci") == "large"
SCALE = 10 if LARGE else 1  # the large profile runs ten times as many programs

PROFILE = settings(
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
POISON = 99  # what an output holds before the run; every Out element must be overwritten


def load_module(gen, program, workdir: Path):
    """(the program's source, its path, the imported module defining `fuzz_kernel`)."""
    source = gen.render(program)
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    name = f"fuzz_{program.kind}_{digest}"
    path = Path(workdir) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return source, path, module


def arguments(gen, program, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    """Fresh arguments in signature order: inputs and InOut tensors copied, Out poisoned."""
    args = []
    for name, shape, dtype, _ in gen.parameters(program):
        if name in inputs:
            args.append(inputs[name].clone())
        else:
            args.append(torch.full(shape, POISON, dtype=ref.TORCH[dtype]))
    return args


def outputs(gen, program, args) -> dict[str, torch.Tensor]:
    return {name: arg
            for (name, _, _, is_output), arg in zip(gen.parameters(program), args, strict=True)
            if is_output}


def run_program(gen, program, workdir: Path, platforms=PLATFORMS) -> int:
    """Builds and runs `program` on every platform (each against the reference, and bit
    for bit against its own `torch_codegen` and the first platform); fails the test on
    any disagreement or error, showing the source.  Returns the number of outputs checked."""
    source, path, module = load_module(gen, program, workdir)
    inputs = gen.make_inputs(program)
    expected = gen.evaluate(program, inputs)
    tolerance = gen.tolerances(program)
    dtypes = {name: dtype for name, _, dtype, _ in gen.parameters(program)}
    failures: list[str] = []

    def check(what: str, got: dict, want: dict, exact: bool = True) -> None:
        """Bit for bit, or (`exact` False: against the reference) within the output's
        stated tolerance."""
        for name, value in want.items():
            allowed = 0 if exact else tolerance[name]
            problem = ref.mismatch(got[name], value, dtypes[name], allowed)
            if problem:
                failures.append(f"{what}, output {name}: {problem}")

    def report(headline: str) -> str:
        return (f"{headline} in {path} (input seed {program.seed}, workers {program.workers}, "
                f"schedule seed {program.schedule_seed}, race detection "
                f"{program.detect_races}):\n" + "\n".join(failures[:12])
                + f"\n--- source ---\n{source}")

    results = {}
    for platform in platforms:
        config = RunConfig(platform=platform, workers=program.workers,
                           schedule_seed=program.schedule_seed,
                           detect_races=program.detect_races)
        args = arguments(gen, program, inputs)
        try:
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always", PyptoWarning)
                warnings.simplefilter("ignore", PyptoPerfHint)
                module.fuzz_kernel(*args, config=config)
                lowered = module.fuzz_kernel.lower(*args, config=config)
            torch_args = arguments(gen, program, inputs)
            load_entry(torch_codegen(lowered), lowered.entry)(*torch_args)
        except Exception as exc:  # noqa: BLE001 - any error of a valid program is a finding
            failures.append(f"{platform}: {type(exc).__name__}: {exc}")
            pytest.fail(report("an error"))
        # A generated program is meant as written: a diagnostic about it is a finding too.
        failures += [f"{platform}: {w.message}" for w in warned
                     if issubclass(w.category, PyptoWarning)]
        sim = outputs(gen, program, args)
        results[platform] = sim
        check(f"{platform} vs torch_codegen", outputs(gen, program, torch_args), sim)
        check(f"{platform} vs the plain reference", sim, expected, exact=False)
    for other in platforms[1:]:
        check(f"{other} vs {platforms[0]}", results[other], results[platforms[0]])
    if failures:
        pytest.fail(report(f"{len(failures)} disagreements"))
    return len(expected)
