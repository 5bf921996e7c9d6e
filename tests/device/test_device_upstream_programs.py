"""Upstream PyPTO's example programs as device code: each program of
`pypto-upstream/examples` that builds kernels runs unmodified, in its own interpreter, on
the CPU-model platforms (`a2a3cpu`, `a5cpu`: the PTO-ISA source the device compiler would
get, built on pto-isa's CPU model), and must end as it does on the simulators
(tests/upstream/test_upstream_programs.py): its own success lines, printed after its
torch comparisons.  A program picks the CPU model through `PYPTO_PLATFORM` (the default
of `RunConfig()` and `ir.compile`); one written for a device platform
(`platform="a2a3"`, or its own `--platform` flag, given the device `a2a3` / `a5`) through
`PYPTO_SIMULATE_DEVICE=cpu-model`, as a user without an NPU would run it.

`NOT_ON_THE_CPU_MODELS` lists the programs that do not run there and why (the table of
docs/device-code.md, "Upstream programs"); the test below checks each reason still holds
where it can be read from the program.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from upstream_runs import SNAPSHOT, assert_ended_as_expected, run_program

from pypto.platform import SIMULATE_DEVICE_ENV, get_platform, simulator_for
from pypto.tools import upstream_compat
from pypto.tools.upstream_compat import Program

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

CPU_MODELS = ("a2a3cpu", "a5cpu")
CPU_MODEL_ENV = ((SIMULATE_DEVICE_ENV, "cpu-model"),)

# Program id -> why it does not run as device code (no kernel built, or its platform named).
NOT_ON_THE_CPU_MODELS = {
    "intermediate/05_assemble": "lowers its programs and prints their function counts; builds "
                                "no kernel",
    "intermediate/06_dyn_valid_shape": "lowers its programs and prints their function counts; "
                                       "builds no kernel",
    "intermediate/07_task_graph": "names `RunConfig(platform=\"a2a3sim\")` itself (no flag "
                                  "changes it): it runs on the simulator",
    "models/03_flash_attention": "prints its @pl.jit function (upstream skips it); builds no "
                                 "kernel",
    "models/07_paged_attention_multi_config": "names `platform=\"a2a3sim\"` itself (no flag "
                                              "changes it): it runs on the simulator",
    "models/08_llama_mini": "builds its @pl.program class; compiles nothing",
    "models/qwen3_jit/qwen3_decode": "lowers its layer; builds no kernel",
    "utils/cross_function_calls": "lowers its program; builds no kernel",
    "utils/error_handling": "shows a lowering error it catches; builds no kernel",
    "utils/parse_from_text": "parses programs from text; builds no kernel",
    "utils/phase_fence_dep_compression": "builds its two programs' IR; compiles nothing here "
                                         "(tests/upstream/test_upstream_kernels.py runs them on "
                                         "the simulators)",
    "runtime/multi_program_kv_cache": "@pl.jit.host (a multi-chip HOST orchestrator) is refused "
                                      "at its line; the program reports it and exits",
    "runtime/distributed_callback": "a HOST-level function, refused at distributed_callback.py:73",
}

ON_THE_CPU_MODELS = tuple(p for p in upstream_compat.PROGRAMS
                          if p.id not in NOT_ON_THE_CPU_MODELS)

# The whole sweep (22 programs on two CPU models) takes longer than CI's budget on two
# cores; CI's slow run takes a program of each tier, and the three that needed device code
# of their own (the column reshape and nested ifs of models/04, the rank-1 element reads
# and block reads of models/09).  PYPTO_UPSTREAM_DEVICE_SWEEP=all runs them all.
SWEEP_ENV = "PYPTO_UPSTREAM_DEVICE_SWEEP"
REPRESENTATIVE = ("beginner/05_matmul", "intermediate/02_softmax",
                  "advanced/03_mixed_kernel[mixed]", "models/04_paged_attention",
                  "models/09_paged_attention_spmd")
SWEPT = ON_THE_CPU_MODELS if os.environ.get(SWEEP_ENV) == "all" else tuple(
    p for p in ON_THE_CPU_MODELS if p.id in REPRESENTATIVE)


def _names_another_backend(program: Program, platform: str) -> str | None:
    """What `program` names itself, with no flag to change it, that is not `platform`'s
    backend (`platform="a2a3"`, `backend_type=BackendType.Ascend910B`), else None."""
    source = "\n".join(line for line in (SNAPSHOT / program.path).read_text().splitlines()
                       if not line.lstrip().startswith("#"))  # code, not its comments
    if '"--platform"' in source:
        return None
    backend = get_platform(platform).backend.name
    for name in ("a2a3", "a5"):
        if f'platform="{name}"' in source and get_platform(name).backend.name != backend:
            return f'platform="{name}"'
    if "backend_type=BackendType." in source and \
            f"backend_type=BackendType.{backend}" not in source:
        return "its backend_type"
    return None


def _device_of(platform: str) -> str:
    """The device platform the CPU-model `platform` stands in for ("a2a3cpu" -> "a2a3"): the
    value a program's own `--platform` flag gets (09_paged_attention_spmd takes a2a3, a2a3sim,
    a5 and a5sim only), which the switch sends back to `platform`."""
    device = platform.removesuffix("cpu")
    assert get_platform(device).kind == "device"
    assert get_platform(device).backend == get_platform(platform).backend
    return device


def test_the_representative_programs_are_programs_that_run_as_device_code():
    assert sorted(p.id for p in SWEPT if p.id in REPRESENTATIVE) == sorted(REPRESENTATIVE)


def test_the_switch_sends_a_device_platform_to_its_cpu_model(monkeypatch):
    monkeypatch.setenv(SIMULATE_DEVICE_ENV, "cpu-model")
    assert [simulator_for(p) for p in ("a2a3", "a5", "a2a3sim", "a5cpu")] == [
        "a2a3cpu", "a5cpu", "a2a3sim", "a5cpu"]
    monkeypatch.setenv(SIMULATE_DEVICE_ENV, "1")
    assert [simulator_for(p) for p in ("a2a3", "a5", "a2a3cpu")] == ["a2a3sim", "a5sim",
                                                                     "a2a3sim"]
    monkeypatch.setenv(SIMULATE_DEVICE_ENV, "yes")
    with pytest.raises(ValueError, match=r"PYPTO_SIMULATE_DEVICE is 'yes'; set it to 1 .*"
                                         r"cpu-model .* or 0"):
        simulator_for("a2a3")


def test_the_table_names_upstream_programs_and_its_reasons_hold():
    ids = {p.id for p in upstream_compat.PROGRAMS}
    assert set(NOT_ON_THE_CPU_MODELS) <= ids
    if not (SNAPSHOT / "examples").is_dir():
        pytest.skip(f"the upstream PyPTO snapshot is absent (looked for {SNAPSHOT}/examples)")
    for program in upstream_compat.PROGRAMS:
        source = (SNAPSHOT / program.path).read_text()
        names_sim = 'platform="a2a3sim"' in source and '"--platform"' not in source
        assert names_sim == ("names `" in NOT_ON_THE_CPU_MODELS.get(program.id, "")), program.id


PAGE = Path(__file__).resolve().parents[2] / "docs" / "device-code.md"
ROW = re.compile(r"^\| `([\w/]+(?:\[[\w-]+\])?)` \| (.*?) \| (.*) \|$", flags=re.MULTILINE)


def test_the_page_has_a_row_for_each_program_saying_whether_it_runs_as_device_code():
    section = PAGE.read_text().split("## Upstream programs", 1)[1].split("\n## ", 1)[0]
    rows = {name: (runs, why) for name, runs, why in ROW.findall(section)}
    assert sorted(rows) == sorted(p.id for p in upstream_compat.PROGRAMS)
    for name, (runs, why) in rows.items():
        if name in NOT_ON_THE_CPU_MODELS:
            assert (runs, why) == ("no", NOT_ON_THE_CPU_MODELS[name]), name
        else:
            assert runs.startswith("yes"), name


@pytest.mark.slow
@pytest.mark.skipif(not (SNAPSHOT / "examples").is_dir(),
                    reason=f"the upstream PyPTO snapshot is absent (looked for {SNAPSHOT}/"
                           "examples); set PYPTO_UPSTREAM_ROOT to a checkout of "
                           "hw-native-sys/pypto to run these tests")
@pytest.mark.parametrize("platform", CPU_MODELS)
@pytest.mark.parametrize("program", SWEPT, ids=lambda p: p.id)
def test_upstream_program_runs_as_device_code(program: Program, platform: str, tmp_path):
    from cpu_models import toolchain_or_skip

    toolchain_or_skip(platform)
    named = _names_another_backend(program, platform)
    if named is not None:
        pytest.skip(f"{program.path} names {named} itself (no flag changes it): it builds "
                    f"for the other CPU model")
    result = run_program(program, platform, tmp_path, env=CPU_MODEL_ENV,
                         flag=_device_of(platform))
    assert_ended_as_expected(program, result)
