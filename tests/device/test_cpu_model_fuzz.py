"""Fuzzed programs (tests/fuzz's generator) agree between pto-isa's CPU model and the sims.

Each generated program runs on a CPU-model platform and on the simulator of the same
backend; every output must be equal bit for bit (NaN matching NaN).  The generator is
reused as it is; lanes that use what the CPU model cannot run or where the two differ by
design (docs/numerics.md, "pto-isa's CPU model and the simulators", one row each) are
dropped from a program before it is rendered:
- dtypes other than FP32, FP16, INT32 and INT16 anywhere (pto-isa lacks INT8 arithmetic on
  A2/A3; BF16 is compared op by op in test_cpu_model_bf16.py);
- reductions of integers (pto-isa's row and column reductions take floats);
- row broadcasts of a column that is not whole 32-byte blocks (device code refuses them);
- float -> int casts but FP32 -> INT16 (the CPU model saturates in the source type: FP32 ->
  INT32 and FP16 -> INT16 round the integer's maximum up and overflow, FP16 -> INT32 takes
  an infinity to 65504);
- casts to a float in a mode other than `rint` / `none` (the CPU model rounds to nearest
  even whatever the mode), and so everything computed from them;
- maximum / minimum in any form (NaN: the CPU model's std::max keeps its first operand,
  the simulators propagate NaN);
- row sums (the CPU model's TROWSUM loop is vectorised with reassociation: at the rules'
  fixed baseline target, eight partial sums from a row of eight columns on, where the
  simulators add in sequence);
- integer division (a zero divisor aborts the CPU model);
- shifts (a count outside [0, bits) is a plain C++ shift on the CPU model);
- lanes reading an earlier lane's scratch tensor;
- a float abs / relu anywhere but as a lane's last operator (the CPU model keeps -0.0,
  the simulators give +0.0, and a later operator could turn the sign into another value);
- rsqrt anywhere but as the last operator of a lane with no reduction outside a loop (the
  CPU model rounds once, the simulators twice, as A5's vsqrt + vdiv do).
Where they stay, a lane ending in a float abs / relu compares -0.0 equal to +0.0, and one
ending in rsqrt allows an ulp (`comparison`); every other output is compared bit for bit.
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

import fuzz_control as fc  # noqa: E402
import fuzz_programs as fp  # noqa: E402
import fuzz_reference as ref  # noqa: E402
import fuzz_task_cases as tasks  # noqa: E402
from cpu_models import toolchain_or_skip  # noqa: E402
from fuzz_runner import run_program  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pypto.compiler import CompileOptions, build_program  # noqa: E402
from pypto.ir.diagnostics import PyptoPerfHint  # noqa: E402
from pypto.runtime import RunConfig, load_artifact  # noqa: E402

PAIRS = {"a2a3cpu": "a2a3sim", "a5cpu": "a5sim"}
# Programs drawn per kind and CPU-model platform (125 per platform): some lose every lane
# to the filter below or are drawn twice, and 72 different ones per platform (their
# rendered texts' sha256; at least DISTINCT) with 192 lanes (at least LANES) are compared.
# (200 a platform gave 106 with 313 lanes at twice the cost: CI's 40 minutes decided.)
DISTINCT, LANES = 70, 190
PROGRAMS = {"tile": 25, "tensor": 25, "partial": 25, "loop": 25, "tasks": 25}


# pto-isa's vector instructions take these on both generations (docs/isa/*.md); INT8
# arithmetic and reductions of integers are A5-only or missing (BF16: test_cpu_model_bf16.py).
DTYPES = ("FP32", "FP16", "INT32", "INT16")


# Float operators whose result differs between the CPU model and the simulators in a way
# the comparison can bound only at a lane's output: abs / relu of -0.0 (the sign of a zero,
# which a later operator could turn into another value: 1 / -0.0) and rsqrt (one rounding
# against two: an ulp, which a later operator could amplify).
ROOT_ONLY = ("abs", "relu", "rsqrt")


def _runs_on_the_cpu_model(expr: fp.Expr, root: bool = True) -> bool:
    if expr.dtype not in DTYPES:
        return False
    if expr.kind == "input" and not expr.value.startswith("x_"):
        return False  # an earlier lane's scratch tensor
    if expr.kind == "cast" and expr.args[0].dtype in fp.FLOATS and expr.dtype in fp.INTS \
            and (expr.args[0].dtype, expr.dtype) != ("FP32", "INT16"):
        return False  # the CPU model saturates in the source type (docs/numerics.md)
    if expr.kind == "cast" and expr.dtype in fp.FLOATS and expr.mode not in ("rint", "none"):
        return False  # the CPU model rounds to a float to nearest even whatever the mode
    if expr.op in ROOT_ONLY and expr.dtype in fp.FLOATS and not root:
        return False
    if expr.op in ("maximum", "minimum"):  # NaN: the CPU model's std::max keeps the first
        return False
    if expr.op == "div" and expr.dtype in fp.INTS:  # x / 0 aborts the CPU model
        return False
    if expr.op in ("shl", "shr"):  # counts outside [0, bits): C++ shifts on the CPU model
        return False
    return all(_runs_on_the_cpu_model(a, root=False) for a in expr.args)


def _float_root(lane: fp.Lane, *ops: str) -> bool:
    return lane.expr.op in ops and lane.expr.dtype in fp.FLOATS


def _comparable(program: fp.Program, lane: fp.Lane) -> bool:
    """Does `lane` run on the CPU model, and does the comparison bound what differs?"""
    if not _runs_on_the_cpu_model(lane.expr):
        return False
    if _float_root(lane, "rsqrt") and (lane.reduce or program.kind == "loop"):
        return False  # a sum of values an ulp apart is not an ulp apart
    return (lane.reduce not in ("row_sum", "row_max", "row_min", "col_max", "col_min")
            and not (lane.reduce and lane.expr.dtype not in fp.FLOATS)
            and not lane.expand.endswith(("max", "min"))
            and not (lane.reduce.startswith("row") and lane.expand
                     and program.rows * ref.TORCH[lane.expr.dtype].itemsize % 32)
            and all(fp.input_dtype(name) in DTYPES for name in lane.expr.inputs()))


def cpu_model_program(program: fp.Program) -> fp.Program | None:
    """`program` without the lanes the CPU model cannot be compared on; None if none is left."""
    kept = [i for i, lane in enumerate(program.lanes) if _comparable(program, lane)]
    if not kept:
        return None
    index = {old: new for new, old in enumerate(kept)}
    lanes = [replace(program.lanes[i], name=f"o{index[i]}") for i in kept]
    groups = [[index[i] for i in g if i in index] for g in program.groups]
    return replace(program, lanes=lanes, groups=[g for g in groups if g])


def comparison(program: fp.Program) -> dict[str, tuple[bool, int]]:
    """How each output of `program` is compared: (are -0.0 and +0.0 equal, ulps allowed).
    Bit for bit, except the outputs of lanes that end in a float abs / relu (the CPU model
    keeps -0.0, docs/numerics.md) and in rsqrt (within an ulp)."""
    rules = {}
    for lane in program.lanes:
        rule = (_float_root(lane, "abs", "relu"), int(_float_root(lane, "rsqrt")))
        rules[lane.name] = rules[f"{lane.name}_acc"] = rule
    return rules


def _unsigned_zeros(t):
    return t.masked_fill(t == 0, 0)


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
                in zip(fp.parameters(self.program), args, strict=True) if is_output}

    def compare(self, cpu_artifact: Path, cpu_platform: str) -> list[str]:
        """The outputs that differ between the CPU model and its simulator."""
        sim_platform = PAIRS[cpu_platform]
        cpu = self.run(cpu_artifact, cpu_platform)
        sim = self.run(self.build(sim_platform), sim_platform)
        dtypes = {name: dtype for name, _, dtype, _ in fp.parameters(self.program)}
        rules = comparison(self.program)
        problems = []
        for name, want in sim.items():
            got, (any_zero_sign, ulps) = cpu[name], rules[name]
            if any_zero_sign:
                got, want = _unsigned_zeros(got), _unsigned_zeros(want)
            problem = ref.mismatch(got, want, dtypes[name], ulps)
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
    toolchain_or_skip(cpu_platform)
    programs = [p for kind, n in sorted(PROGRAMS.items()) for p in generated_programs(kind, n)]
    # Each different program once (the generator draws some twice), told apart by the
    # sha256 of its text.
    programs = list({hashlib.sha256(fp.render(p).encode()).hexdigest(): p
                     for p in map(cpu_model_program, programs) if p is not None}.values())
    lanes = sum(len(p.lanes) for p in programs)
    assert len(programs) >= DISTINCT and lanes >= LANES, (len(programs), lanes)
    cases = [Case(p, tmp_path) for p in programs]
    # One build in this thread first: the compiler's digest of its own sources (read with
    # Python's ast, which is not thread-safe) is computed once and cached.
    cases[0].build(PAIRS[cpu_platform])
    # The CPU-model compiles two at a time (each is a compiler process), then the runs.
    with ThreadPoolExecutor(max_workers=2) as pool:
        artifacts = list(pool.map(lambda case: case.build(cpu_platform), cases))
    problems = [problem for case, artifact in zip(cases, artifacts, strict=True)
                for problem in case.compare(artifact, cpu_platform)]
    assert not problems, f"{len(problems)} disagreements; the first:\n{problems[0]}"


def test_programs_keep_their_lanes_in_order_when_some_are_dropped():
    x = fp.Expr("input", "FP32", value="x_FP32_0")
    bf = fp.Expr("input", "BF16", value="x_BF16_0")
    program = fp.Program("tensor", 16, 64, [fp.Lane("o0", bf), fp.Lane("o1", x),
                                             fp.Lane("o2", x)], groups=[[0, 1], [2]])
    kept = cpu_model_program(program)
    assert [lane.name for lane in kept.lanes] == ["o0", "o1"]
    assert kept.groups == [[0], [1]]


def test_abs_relu_and_rsqrt_of_floats_are_compared_only_as_a_lanes_last_operator():
    x = fp.Expr("input", "FP16", value="x_FP16_0")
    relu = fp.Expr("unary", "FP16", "relu", (x,))
    rsqrt = fp.Expr("unary", "FP16", "rsqrt", (x,))
    lanes = [fp.Lane("o0", relu), fp.Lane("o1", fp.Expr("unary", "FP16", "neg", (relu,))),
             fp.Lane("o2", rsqrt), fp.Lane("o3", rsqrt, reduce="row_sum"),
             fp.Lane("o4", fp.Expr("unary", "INT16", "relu",
                                   (fp.Expr("input", "INT16", value="x_INT16_0"),)))]
    kept = cpu_model_program(fp.Program("tile", 16, 64, lanes))
    assert [lane.expr for lane in kept.lanes] == [relu, rsqrt, lanes[4].expr]
    assert comparison(kept) == {"o0": (True, 0), "o0_acc": (True, 0), "o1": (False, 1),
                                "o1_acc": (False, 1), "o2": (False, 0), "o2_acc": (False, 0)}


def test_casts_to_a_float_are_compared_only_when_they_round_to_nearest_even():
    x = fp.Expr("input", "INT32", value="x_INT32_0")
    lanes = [fp.Lane(f"o{i}", fp.Expr("cast", "FP32", "cast", (x,), mode=mode))
             for i, mode in enumerate(fp.MODES)]
    kept = cpu_model_program(fp.Program("tile", 16, 64, lanes))
    assert [lane.expr.mode for lane in kept.lanes] == ["none", "rint"]


# The automatic cross-core pipe (tests/fuzz's "piped" family: a mixed pl.at block with
# pl.split / pl.cross_core_slot) as device code, against the simulator, the torch semantics
# and the reference.  Drawn within what the two run alike: FP16 / BF16 operands (their
# products are exact in FP32, so the CPU model's fma per k gives the simulators' rounded
# product and sum), values 32 or 64 columns wide (a LEFT_RIGHT half of an FP16 value then
# fills whole 32-byte rows, which is what device code hands through the pipe), lane
# expressions the filter above keeps everywhere (with the matmul's value read as an input).
PIPED_BATCHES, PIPED_CASES = 2, 4


def _piped_lane_runs(expr: fp.Expr) -> bool:
    def as_input(e: fp.Expr) -> fp.Expr:
        if e.kind == "input" and e.value == "acc":
            return replace(e, value="x_FP32_acc")
        return replace(e, args=tuple(as_input(a) for a in e.args))
    return _runs_on_the_cpu_model(as_input(expr), root=False)


@st.composite
def _piped_batches(draw) -> fc.Program:
    cases = [draw(tasks.piped_case(f"c{k}", sources=("FP16", "BF16"), widths=(32, 64),
                                   keep=_piped_lane_runs)) for k in range(PIPED_CASES)]
    return fc.Program(cases, seed=draw(st.integers(0, 2**31 - 1)), kind="piped")


@pytest.mark.slow
@pytest.mark.parametrize("cpu_platform", sorted(PAIRS))
def test_fuzzed_piped_blocks_agree_between_the_cpu_model_and_the_simulator(cpu_platform,
                                                                           tmp_path):
    toolchain_or_skip(cpu_platform)
    groups = []

    @settings(deadline=None, derandomize=True, database=None, max_examples=PIPED_BATCHES,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.function_scoped_fixture])
    @given(program=_piped_batches())
    def check(program):
        groups.append(run_program(fc, program, tmp_path,
                                  platforms=(PAIRS[cpu_platform], cpu_platform)))

    check()
    assert len(groups) == PIPED_BATCHES and sum(groups) >= PIPED_BATCHES * PIPED_CASES
