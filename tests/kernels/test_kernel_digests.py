"""The library's goldens and the simulators' outputs are the same bytes on every machine:
equal to the digests committed in tests/kernels/digests.json whatever SIMD path torch's
kernels take (ATEN_CPU_CAPABILITY), however many threads torch runs, and with the
simulator's own SIMD paths off (PYPTO_SIM_SIMD=0).  A machine that computes another bit
fails here, naming the files.

The default run makes every golden on torch's scalar path and runs two compiled variants
(exp, conversions, reductions and the vector matmul among them) both ways; the slow run
covers every capability and thread count, and every variant on both simulators."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest
from shipped_digests import HERE, committed, golden_digests, sim_digests
from shipped_library import PLATFORMS, ROOT, shipped_specs

from pypto.golden import GENERATOR_ID, record_golden

REGENERATE = "python tests/kernels/shipped_digests.py BUILD (after scons in BUILD, both sims)"

GOLDENS_SCRIPT = """
import json, sys, tempfile, warnings
from pathlib import Path
import torch
torch.set_num_threads(int(sys.argv[1]))
sys.path.insert(0, sys.argv[2])
from shipped_digests import golden_digests
from shipped_library import shipped_specs, spec_modules
from pypto.golden import record_golden
root = Path(tempfile.mkdtemp())
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # tolerance diagnostics
    for module in spec_modules():
        for kernel in shipped_specs(module):
            for variant in kernel.variants:
                record_golden(kernel.golden_case(variant), root / kernel.name / variant)
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(),
                  "threads": torch.get_num_threads(), "goldens": golden_digests(root)}))
"""

SIM_SCRIPT = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from shipped_digests import sim_digests
print(json.dumps(sim_digests(Path(sys.argv[2]), sys.argv[3])))
"""

ARTIFACT_SCRIPT = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from shipped_digests import output_digests
from pypto.runtime.loader import load_artifact
cases = json.loads(sys.argv[2])
print(json.dumps({name: output_digests(load_artifact(artifact), Path(golden))
                  for name, (artifact, golden) in cases.items()}))
"""
# The default run's variants: softmax's FP16 conversions, row reductions and expdif; the
# matmul's packing and register-tiled kernel (AVX-512, AVX2 or SSE2 here).
QUICK = (("normalization", "softmax", "f16_16x200"), ("matmul", "matmul_tile", "f16_13x40x50"))


def run_python(script: str, *args: str, env: dict[str, str]) -> dict:
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep), **env}
    proc = subprocess.run([sys.executable, "-c", script, *args], env=full_env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def differing(got: dict, want: dict) -> list[str]:
    """The cases whose digests differ, or that only one side has."""
    return sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))


def goldens_under(capability: str, threads: int) -> dict:
    found = run_python(GOLDENS_SCRIPT, str(threads), str(HERE),
                       env={"ATEN_CPU_CAPABILITY": capability, "OMP_NUM_THREADS": str(threads)})
    assert found["capability"].lower() == capability and found["threads"] == threads, found
    return found["goldens"]


def torch_capabilities() -> list[str]:
    """ATen's dispatch levels this CPU runs: default (scalar) and its vector ones."""
    native = run_python("import torch; import json; print(json.dumps("
                        "torch.backends.cpu.get_cpu_capability()))", env={}).lower()
    return ["default"] + {"avx512": ["avx2", "avx512"], "avx2": ["avx2"]}.get(native, [native])


def test_the_committed_digests_are_of_this_generator():
    recorded = committed()["generator"]
    assert recorded == GENERATOR_ID, (
        f"tests/kernels/digests.json was made with generator {recorded!r}, this pypto draws "
        f"inputs with {GENERATOR_ID!r}: the goldens differ by design, not by a fault; "
        f"regenerate the digests: {REGENERATE}")


@pytest.mark.slow
def test_every_golden_is_its_committed_digest(library):
    wrong = differing(golden_digests(library.build / "goldens"), committed()["goldens"])
    assert not wrong, (
        f"goldens that differ from tests/kernels/digests.json: {wrong}; if a spec changed "
        f"on purpose, {REGENERATE}; otherwise this machine computes other bits")


@pytest.mark.slow
@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_simulator_output_is_its_committed_digest(library, platform):
    wrong = differing(sim_digests(library.build, platform), committed()["sim"][platform])
    assert not wrong, (
        f"{platform} outputs that differ from tests/kernels/digests.json: {wrong}; if a "
        f"kernel changed on purpose, {REGENERATE}; otherwise this host computes other bits")


def test_goldens_made_on_torchs_scalar_path_on_one_thread_are_the_committed_ones():
    wrong = differing(goldens_under("default", 1), committed()["goldens"])
    assert not wrong, f"ATEN_CPU_CAPABILITY=default, 1 thread: {wrong} differ"


@pytest.mark.slow
def test_goldens_are_the_same_under_every_cpu_capability_and_thread_count():
    want = committed()["goldens"]
    for capability, threads in [(c, t) for c in torch_capabilities() for t in (1, 2)]:
        wrong = differing(goldens_under(capability, threads), want)
        assert not wrong, f"ATEN_CPU_CAPABILITY={capability}, {threads} threads: {wrong} differ"


@pytest.mark.slow
@pytest.mark.parametrize("platform", PLATFORMS)
def test_simulator_outputs_are_the_same_with_its_simd_paths_off(library, platform):
    off = run_python(SIM_SCRIPT, str(HERE), str(library.build), platform,
                     env={"PYPTO_SIM_SIMD": "0"})
    wrong = differing(off, committed()["sim"][platform])
    assert not wrong, f"{platform} with PYPTO_SIM_SIMD=0: {wrong} differ from the digests"


def test_two_variants_give_their_committed_bytes_with_simd_paths_on_and_off(tmp_path):
    from pypto.compiler import CompileOptions, build_program

    cases = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the kernels' perf hints, reported by the build
        for module, name, variant in QUICK:
            kernel = next(k for k in shipped_specs(module) if k.name == name)
            golden = record_golden(kernel.golden_case(variant), tmp_path / name / variant)
            program = kernel.program(variant)
            artifact = build_program(program, CompileOptions(platform="a2a3sim"))
            cases[f"{name}/{variant}"] = (str(artifact), str(golden))
    on = run_python(ARTIFACT_SCRIPT, str(HERE), json.dumps(cases), env={})
    off = run_python(ARTIFACT_SCRIPT, str(HERE), json.dumps(cases), env={"PYPTO_SIM_SIMD": "0"})
    want = {case: committed()["sim"]["a2a3sim"][case] for case in cases}
    assert on == want and off == want, {"on": differing(on, want), "off": differing(off, want)}
