"""The shipped kernel library on pto-isa's CPU model: every variant is built for a2a3cpu and
a5cpu and checked against its golden; the ones that cannot pass are exactly those
docs/device-code.md lists, each failing for the reason given there.  Slow: ~120 CPU-model
compiles of 5-10 s each (two at a time)."""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cpu_models import toolchain_or_skip

from pypto.compiler import CompileOptions, build_program
from pypto.golden import record_golden
from pypto.ir.errors import PyptoError
from pypto.runtime.library import check_artifact
from pypto.spec.module import specs_of

ROOT = Path(__file__).resolve().parents[2]

# The library's narrow variants raise perf hints by design (their specs accept them).
pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

# (kernel, variant) -> what stops it on the CPU model (docs/device-code.md, "What runs";
# docs/numerics.md, "pto-isa's CPU model and the simulators").
NOT_ON_THE_CPU_MODEL = {
    ("fp16_to_int8", "f16_64x128"): "outside exact",  # NaN -> INT8
    ("fp16_to_int8", "f16_5x77"): "outside exact",
}


def _variants():
    for path in sorted((ROOT / "kernels").glob("[!_]*.py")):
        for kernel in specs_of(path, ROOT):
            for variant in kernel.variants:
                yield kernel, variant


def _build(kernel, variant, platform):
    try:
        return build_program(kernel.program(variant), CompileOptions(platform=platform)), ""
    except PyptoError as exc:
        return None, str(exc)


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_every_shipped_variant_passes_on_the_cpu_model_but_the_documented_ones(platform):
    toolchain_or_skip(platform)
    cases = list(_variants())
    with ThreadPoolExecutor(max_workers=2) as pool:
        built = list(pool.map(lambda case: _build(*case, platform), cases))
    failed = {}
    passed = []
    with tempfile.TemporaryDirectory() as tmp:
        for (kernel, variant), (artifact, error) in zip(cases, built, strict=True):
            if artifact is None:
                failed[(kernel.name, variant)] = error
                continue
            golden = Path(tmp) / kernel.name / variant
            record_golden(kernel.golden_case(variant), golden, overwrite=True)
            rows = check_artifact(artifact, golden, kernel=kernel.name, variant=variant,
                                  platform=platform)
            if all(row.passed for row in rows):
                passed.append((kernel.name, variant))
            else:
                failed[(kernel.name, variant)] = "; ".join(row.detail for row in rows)
    assert sorted(failed) == sorted(NOT_ON_THE_CPU_MODEL), failed
    for case, reason in NOT_ON_THE_CPU_MODEL.items():
        assert reason in failed[case], (case, failed[case])
    assert len(passed) == len(cases) - len(NOT_ON_THE_CPU_MODEL) >= 50
