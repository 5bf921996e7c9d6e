"""Fuzzed programs (tests/fuzz's generator) agree between pto-isa's CPU model and the sims.

Each generated program runs on a CPU-model platform and on the simulator of the same
backend; every output must be equal bit for bit (NaN matching NaN).  The generator is
reused as it is; lanes that use what the CPU model cannot run or where the two differ by
design (docs/numerics.md, "pto-isa's CPU model and the simulators") are dropped from a
program before it is rendered: dtypes other than FP32, FP16, INT32 and INT16 anywhere
(pto-isa lacks INT8 arithmetic on A2/A3, and its CPU model computes BF16 as FP16),
reductions of integers (pto-isa's row and column reductions take floats), row broadcasts
of a column that is not whole 32-byte blocks (device code refuses them),
the `col_sum` tree (the CPU model sums sequentially), float -> int casts (NaN converts
differently), maximum / minimum in any form (NaN: the CPU model's std::max keeps its first
operand, the simulators propagate NaN), integer division (a zero divisor aborts the CPU
model), shifts (a count outside [0, bits) is a plain C++ shift on the CPU model), xor (no
device code yet) and lanes reading an earlier lane's scratch tensor.
Slow: every program is a CPU-model compile (5-10 s).
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"
sys.path.insert(0, str(FUZZ))

import fuzz_programs as fp  # noqa: E402
import fuzz_reference as ref  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from pypto.compiler import CompileOptions, build_program  # noqa: E402
from pypto.ir.diagnostics import PyptoPerfHint  # noqa: E402
from pypto.platform import get_platform  # noqa: E402
from pypto.runtime import RunConfig, load_artifact  # noqa: E402
from pypto.toolchain import Toolchain, ToolchainNotFoundError  # noqa: E402

PAIRS = {"a2a3cpu": "a2a3sim", "a5cpu": "a5sim"}
# Programs drawn per kind and CPU-model platform (75 per platform); about a third lose
# every lane to the filter below, and at least 50 per platform, 100 in all, are compared.
PROGRAMS = {"tile": 15, "tensor": 15, "partial": 15, "loop": 15, "tasks": 15}


# pto-isa's vector instructions take these on both generations (docs/isa/*.md); INT8
# arithmetic and reductions of integers are A5-only or missing, and BF16 runs as FP16 on
# the CPU model.
DTYPES = ("FP32", "FP16", "INT32", "INT16")


def _runs_on_the_cpu_model(expr: fp.Expr) -> bool:
    if expr.dtype not in DTYPES:
        return False
    if expr.kind == "input" and not expr.value.startswith("x_"):
        return False  # an earlier lane's scratch tensor
    if expr.kind == "cast" and expr.args[0].dtype in fp.FLOATS and expr.dtype in fp.INTS:
        return False
    if expr.op == "xor":  # TXOR / TXORS need a scratch tile: no device code yet
        return False
    if expr.op in ("maximum", "minimum"):  # NaN: the CPU model's std::max keeps the first
        return False
    if expr.op == "div" and expr.dtype in fp.INTS:  # x / 0 aborts the CPU model
        return False
    if expr.op in ("shl", "shr"):  # counts outside [0, bits): C++ shifts on the CPU model
        return False
    return all(_runs_on_the_cpu_model(a) for a in expr.args)


def cpu_model_program(program: fp.Program) -> fp.Program | None:
    """`program` without the lanes the CPU model cannot be compared on; None if none is left."""
    kept = [i for i, lane in enumerate(program.lanes)
            if _runs_on_the_cpu_model(lane.expr)
            and lane.reduce not in ("col_sum_tree", "row_max", "row_min", "col_max", "col_min")
            and not (lane.reduce and lane.expr.dtype not in fp.FLOATS)
            and not lane.expand.endswith(("max", "min"))
            and not (lane.reduce.startswith("row") and lane.expand
                     and program.rows * ref.TORCH[lane.expr.dtype].itemsize % 32)
            and all(fp.input_dtype(name) in DTYPES for name in lane.expr.inputs())]
    if not kept:
        return None
    index = {old: new for new, old in enumerate(kept)}
    lanes = [replace(program.lanes[i], name=f"o{index[i]}") for i in kept]
    groups = [[index[i] for i in g if i in index] for g in program.groups]
    return replace(program, lanes=lanes, groups=[g for g in groups if g])


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def torch_full(shape, dtype):
    import torch

    return torch.full(shape, 99, dtype=ref.TORCH[dtype])


class Case:
    """One program made ready in the main thread (parsing is not thread-safe): its source,
    inputs and frontend IR; `build` (any thread) compiles it, `compare` runs it."""

    def __init__(self, program: fp.Program, workdir: Path):
        self.program = program
        self.source = fp.render(program)
        digest = hashlib.sha256(self.source.encode()).hexdigest()[:12]
        self.path = workdir / f"cpu_{program.kind}_{digest}.py"
        self.path.write_text(self.source)
        module = _import(self.path, f"cpu_{program.kind}_{digest}")
        self.inputs = fp.make_inputs(program)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PyptoPerfHint)
            self.frontend = module.fuzz_kernel.frontend(*self._arguments())

    def _arguments(self) -> list:
        return [torch_full(shape, dtype) if is_output else self.inputs[name].clone()
                for name, shape, dtype, is_output in fp.parameters(self.program)]

    def build(self, platform: str) -> Path:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PyptoPerfHint)
            return build_program(self.frontend, CompileOptions(platform=platform))

    def run(self, artifact: Path, platform: str) -> dict:
        args = self._arguments()
        config = RunConfig(platform=platform, workers=self.program.workers)
        load_artifact(artifact).run(args, config)
        return {name: arg for (name, _, _, is_output), arg
                in zip(fp.parameters(self.program), args) if is_output}

    def compare(self, cpu_artifact: Path, cpu_platform: str) -> list[str]:
        """The outputs that differ between the CPU model and its simulator."""
        sim_platform = PAIRS[cpu_platform]
        cpu = self.run(cpu_artifact, cpu_platform)
        sim = self.run(self.build(sim_platform), sim_platform)
        dtypes = {name: dtype for name, _, dtype, _ in fp.parameters(self.program)}
        problems = []
        for name, want in sim.items():
            problem = ref.mismatch(cpu[name], want, dtypes[name])
            if problem:
                problems.append(f"{cpu_platform} vs {sim_platform}, output {name}: {problem}"
                                f"\n--- source ({self.path}) ---\n{self.source}")
        return problems


def generated_programs(kind: str, count: int) -> list[fp.Program]:
    """The first `count` programs of `kind` tests/fuzz's CI profile draws (derandomized)."""
    drawn: list[fp.Program] = []

    @settings(deadline=None, derandomize=True, database=None, max_examples=count,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(program=fp.programs(kind, (10, 14)))
    def draw(program):
        drawn.append(program)

    draw()
    return drawn


@pytest.mark.slow
@pytest.mark.parametrize("cpu_platform", sorted(PAIRS))
def test_fuzzed_programs_agree_between_the_cpu_model_and_the_simulator(cpu_platform, tmp_path):
    try:
        Toolchain.for_platform(get_platform(cpu_platform))
    except ToolchainNotFoundError as exc:
        pytest.skip(f"no compiler for {cpu_platform}: {exc}")
    programs = [p for kind, n in sorted(PROGRAMS.items()) for p in generated_programs(kind, n)]
    programs = [p for p in map(cpu_model_program, programs) if p is not None]
    cases = [Case(p, tmp_path) for p in programs]
    # One build in this thread first: the compiler's digest of its own sources (read with
    # Python's ast, which is not thread-safe) is computed once and cached.
    cases[0].build(PAIRS[cpu_platform])
    # The CPU-model compiles two at a time (each is a compiler process), then the runs.
    with ThreadPoolExecutor(max_workers=2) as pool:
        artifacts = list(pool.map(lambda case: case.build(cpu_platform), cases))
    problems = [problem for case, artifact in zip(cases, artifacts)
                for problem in case.compare(artifact, cpu_platform)]
    assert not problems, f"{len(problems)} disagreements; the first:\n{problems[0]}"
    lanes = sum(len(p.lanes) for p in programs)
    assert len(programs) >= 50 and lanes >= 200, (len(programs), lanes)


def test_programs_keep_their_lanes_in_order_when_some_are_dropped():
    x = fp.Expr("input", "FP32", value="x_FP32_0")
    bf = fp.Expr("input", "BF16", value="x_BF16_0")
    program = fp.Program("tensor", 16, 64, [fp.Lane("o0", bf), fp.Lane("o1", x),
                                             fp.Lane("o2", x)], groups=[[0, 1], [2]])
    kept = cpu_model_program(program)
    assert [lane.name for lane in kept.lanes] == ["o0", "o1"]
    assert kept.groups == [[0], [1]]
