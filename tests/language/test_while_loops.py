"""While loops: upstream's `for (x,) in pl.while_(init_values=(x0,)):` whose body starts
with `pl.cond(c)`, in kernels and in orchestration code; printed as Python's `while c:`."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.compiler import CompileOptions, run_pipeline
from pypto.debug import load_entry, torch_codegen
from pypto.ir import ParseError, TypeCheckError, VerificationLevel, While
from pypto.ir.types import TensorType, TileType
from pypto.ir.visitor import statements
from pypto.platform import get_platform
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

PLATFORMS = ["a2a3sim", "a5sim"]


@pl.jit.incore
def counted(x: pl.Tensor[[16, 128], pl.FP32], n: pl.Scalar[pl.INDEX],
            out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    for (k, acc) in pl.while_(init_values=(0, t)):
        pl.cond(k < n)  # continue while true
        _k, total = pl.yield_(k + 1, pl.mul(pl.neg(pl.add(acc, t)), 0.5))
    out = pl.store(total, [0, 0], out)
    return out


def _counted_by_hand(x: torch.Tensor, n: int) -> torch.Tensor:
    acc = x.clone()
    for _ in range(n):
        acc = -(acc + x) * 0.5
    return acc


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("n", [0, 1, 5])
def test_a_counter_loop_runs_while_its_condition_holds(platform, n):
    x, out = torch.randn(16, 128, generator=torch.Generator().manual_seed(n)), torch.zeros(16, 128)
    counted(x, n, out, config=RunConfig(platform=platform))
    # n = 0: the loop never runs, and its results are the init values
    assert torch.equal(out, _counted_by_hand(x, n))


@pl.jit.incore
def until_past(x: pl.Tensor[[16, 128], pl.FP32], limit: pl.Scalar[pl.FP32],
               out: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
               steps: pl.Out[pl.Tensor[[1, 8], pl.INT32]]):
    t = pl.load(x, [0, 0], [16, 128])
    for (acc, k) in pl.while_(init_values=(t, 0)):
        pl.cond(acc[0, 0] < limit)  # an element of the tile the body accumulates
        total, count = pl.yield_(pl.add(acc, t), k + 1)
    out = pl.store(total, [0, 0], out)
    steps = pl.store(pl.full([1, 8], pl.INT32, count), [0, 0], steps)
    return out, steps


def _until_past_arguments(seed: int = 3) -> list:
    x = torch.rand(16, 128, generator=torch.Generator().manual_seed(seed)) + 0.5
    return [x, 6.0, torch.zeros(16, 128), torch.zeros(1, 8, dtype=torch.int32)]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_condition_on_a_value_the_body_computes_is_tested_before_each_iteration(platform):
    x, limit, out, steps = _until_past_arguments()
    until_past(x, limit, out, steps, config=RunConfig(platform=platform))
    acc, k = x.clone(), 0
    while acc[0, 0] < limit:
        acc, k = acc + x, k + 1
    assert k > 1
    assert torch.equal(out, acc)
    assert torch.equal(steps, torch.full((1, 8), k, dtype=torch.int32))


def test_a_condition_false_at_entry_leaves_the_init_values():
    x, _, out, steps = _until_past_arguments()
    until_past(x, 0.0, out, steps)
    assert torch.equal(out, x)
    assert torch.equal(steps, torch.zeros(1, 8, dtype=torch.int32))


@pl.jit.incore
def float_carry(x: pl.Tensor[[16, 128], pl.FP32], limit: pl.Scalar[pl.FP32],
                out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    for (s, acc) in pl.while_(init_values=(t[0, 1], t)):
        pl.cond(s < limit)  # a carried FP32 scalar
        grown = pl.add(acc, s)
        _s, total = pl.yield_(s * 1.5 + 0.1, grown)
    out = pl.store(total, [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_carried_float_scalar_conditions_the_loop_as_torch_codegen_does(platform):
    x = torch.rand(16, 128, generator=torch.Generator().manual_seed(4)) + 0.3
    out, reference = torch.zeros(16, 128), torch.zeros(16, 128)
    config = RunConfig(platform=platform)
    float_carry(x, 7.0, out, config=config)
    program = float_carry.lower(x, 7.0, out, config=config)
    load_entry(torch_codegen(program, check_shapes=True), program.entry)(x, 7.0, reference)
    assert torch.equal(out, reference)
    assert not torch.equal(out, x)  # it ran


@pl.jit.incore
def nested(x: pl.Tensor[[64, 128], pl.FP32], n: pl.Scalar[pl.INDEX],
           out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    for i in pl.range(4):  # a while inside a pl.range
        t = pl.load(x, [i * 16, 0], [16, 128])
        for (k, acc) in pl.while_(init_values=(0, t)):
            pl.cond(k < n + i)
            _k, row = pl.yield_(k + 1, pl.add(acc, t))
        out = pl.store(row, [i * 16, 0], out)
    for (j,) in pl.while_(init_values=(0,)):  # a pl.range inside a while
        pl.cond(j < n)
        for i in pl.range(4):
            u = pl.load(out, [i * 16, 0], [16, 128])
            out = pl.store(pl.mul(u, 0.75), [i * 16, 0], out)
        _j = pl.yield_(j + 1)
    return out


def _nested_by_hand(x: torch.Tensor, n: int) -> torch.Tensor:
    out = torch.zeros_like(x)
    for i in range(4):
        t = x[i * 16:(i + 1) * 16]
        acc = t.clone()
        for _ in range(n + i):
            acc = acc + t
        out[i * 16:(i + 1) * 16] = acc
    for _ in range(n):
        out = out * 0.75
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("n", [0, 2])
def test_while_loops_nest_with_range_loops_both_ways(platform, n):
    x, out = torch.randn(64, 128, generator=torch.Generator().manual_seed(11)), torch.zeros(64, 128)
    nested(x, n, out, config=RunConfig(platform=platform))
    assert torch.equal(out, _nested_by_hand(x, n))


@pl.jit
def dispatching(x: pl.Tensor[[64, 128], pl.FP32], n: pl.Scalar[pl.INDEX],
                out: pl.InOut[pl.Tensor[[64, 128], pl.FP32]]):
    for (k,) in pl.while_(init_values=(0,)):
        pl.cond(k < n)
        for i in pl.range(4):
            with pl.at(level=pl.Level.CORE_GROUP):
                rows = out[i * 16:(i + 1) * 16, :]
                out[i * 16:(i + 1) * 16, :] = pl.add(pl.mul(rows, 0.5), x[i * 16:(i + 1) * 16, :])
        _k = pl.yield_(k + 1)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("n", [0, 3])
def test_a_while_in_orchestration_dispatches_its_tasks_in_order(platform, n):
    g = torch.Generator().manual_seed(5)
    x, out = torch.randn(64, 128, generator=g), torch.randn(64, 128, generator=g)
    expected = out.clone()
    for _ in range(n):
        expected = expected * 0.5 + x
    dispatching(x, n, out, config=RunConfig(platform=platform, detect_races=True,
                                            schedule_seed=7))
    assert torch.equal(out, expected)


@pl.jit
def written_in_a_while(x: pl.Tensor[[64, 128], pl.FP32], n: pl.Scalar[pl.INDEX],
                       out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    for i in pl.range(4):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            t = pl.load(x, [i * 16, 0], [16, 128])
            out = pl.store(t, [i * 16, 0], out)
            for (k,) in pl.while_(init_values=(0,)):
                pl.cond(k < n)
                out = pl.store(pl.add(t, 1.0), [i * 16, 0], out)
                _k = pl.yield_(k + 1)
    return out


def test_a_task_argument_touched_in_a_while_loop_stays_whole():
    x, out = torch.randn(64, 128), torch.zeros(64, 128)
    kernel = written_in_a_while.lower(x, 2, out).function("written_in_a_while_rows")
    types = {p.var.name: p.var.type for p in kernel.params}
    assert types["x"] == TensorType((16, 128), pl.FP32)  # touched outside the loop: narrowed
    assert types["out"] == TensorType((64, 128), pl.FP32)  # the loop's store may not run
    written_in_a_while(x, 2, out, config=RunConfig(detect_races=True, schedule_seed=3))
    assert torch.equal(out, x + 1.0)


def test_a_tile_read_in_a_while_loop_keeps_its_buffer_for_the_whole_loop():
    kernel = counted.lower(torch.zeros(16, 128), 1, torch.zeros(16, 128)).function("counted")
    t = next(s.targets[0] for s in kernel.body if s.targets[0].name == "t")
    loop = next(s for s in kernel.body if isinstance(s, While))
    inside = [s.targets[0] for s in statements(loop.body)
              if isinstance(s.targets[0].type, TileType)]
    # the negation is computed after the body's last read of `t`, which the next
    # iteration reads again: it must not take t's buffer
    assert [v.name for v in inside] == ["add_0", "neg_0", "acc"]
    assert all(v.type.addr != t.type.addr for v in inside)


@pytest.mark.parametrize("kernel, args", [
    (counted, (torch.zeros(16, 128), 2, torch.zeros(16, 128))),
    (until_past, tuple(_until_past_arguments())),
    (nested, (torch.zeros(64, 128), 2, torch.zeros(64, 128))),
    (dispatching, (torch.zeros(64, 128), 2, torch.zeros(64, 128))),
])
def test_a_while_loop_prints_as_python_while_and_parses_back_equal(kernel, args):
    for program in (kernel.frontend(*args), kernel.lower(*args)):
        text = program.as_python()
        assert "while " in text and "pl.while_" not in text
        assert pl.parse(text) == program
    # every pass's result printed and parsed back, and the verifier's checks after each
    run_pipeline(kernel.frontend(*args), get_platform("a5sim"),
                 CompileOptions(verification_level=VerificationLevel.ROUNDTRIP))


@pytest.mark.parametrize("kernel, args, outputs", [
    (counted, lambda: [torch.randn(16, 128), 4, torch.zeros(16, 128)], [2]),
    (until_past, _until_past_arguments, [2, 3]),
    (nested, lambda: [torch.randn(64, 128), 2, torch.zeros(64, 128)], [2]),
    (dispatching, lambda: [torch.randn(64, 128), 3, torch.randn(64, 128)], [2]),
])
def test_torch_codegen_runs_the_while_loops_as_the_simulator_does(kernel, args, outputs):
    simulated, reference = args(), args()
    reference[:] = [a.clone() if isinstance(a, torch.Tensor) else a for a in simulated]
    kernel(*simulated)
    program = kernel.lower(*reference)
    load_entry(torch_codegen(program, check_shapes=True), program.entry)(*reference)
    for i in outputs:
        assert torch.equal(simulated[i], reference[i])


def test_python_while_is_the_loop_as_printed():
    program = pl.parse(counted.frontend(torch.zeros(16, 128), 2, torch.zeros(16, 128)).as_python())
    loop = next(s for s in program.functions[0].body if isinstance(s, While))
    assert [t.name for s in loop.body for t in s.targets] == ["k", "acc"]
    assert program.functions[0].as_python().count("while k < n:") == 1


# ----------------------------------------------------------------------------- errors


@pl.jit.incore
def no_init_values(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    for (k,) in pl.while_():  # error: no init_values
        pl.cond(k < 4)
        _k = pl.yield_(k + 1)
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit.incore
def cond_second(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    for (k,) in pl.while_(init_values=(0,)):
        t = pl.add(t, 1.0)  # error: pl.cond not first
        pl.cond(k < 4)
        _k = pl.yield_(k + 1)
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit.incore
def cond_missing(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    for (k,) in pl.while_(init_values=(0,)):
        _k = pl.yield_(k + 1)  # error: pl.cond missing
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit.incore
def cond_outside(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    for i in pl.range(4):
        pl.cond(i < 2)  # error: pl.cond outside a while
        t = pl.add(t, 1.0)
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit.incore
def tile_condition(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    for (acc,) in pl.while_(init_values=(t,)):
        pl.cond(acc < 4.0)  # error: a tile condition
        total = pl.yield_(pl.add(acc, 1.0))
    out = pl.store(total, [0, 0], out)
    return out


@pl.jit
def tensor_condition(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    for (k,) in pl.while_(init_values=(0,)):
        pl.cond(x)  # error: a tensor condition
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(x, 1.0)
        _k = pl.yield_(k + 1)
    return out


@pl.jit.incore
def constant_condition(x: pl.Tensor[[16, 128], pl.FP32],
                       out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    for (k,) in pl.while_(init_values=(0,)):
        pl.cond(True)  # error: a compile-time condition
        _k = pl.yield_(k + 1)
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit.incore
def retyped_carry(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    for (s,) in pl.while_(init_values=(0,)):
        pl.cond(s < 4)
        _s = pl.yield_(t[0, 0])  # error: the carry changes type
    out = pl.store(t, [0, 0], out)
    return out


@pytest.mark.parametrize("kernel, marker, cls, fragment", [
    (no_init_values, "error: no init_values", ParseError,
     "while_() requires init_values to be specified"),
    (cond_second, "error: pl.cond not first", ParseError,
     "a pl.while_ body starts with `pl.cond(...)`"),
    (cond_missing, "error: pl.cond missing", ParseError,
     "a pl.while_ body starts with `pl.cond(...)`"),
    (cond_outside, "error: pl.cond outside a while", ParseError,
     "pl.cond(...) is the first statement of a pl.while_ body, and nowhere else"),
    (tile_condition, "error: a tile condition", TypeCheckError,
     "`acc` must be a scalar here"),
    (tensor_condition, "error: a tensor condition", TypeCheckError,
     "the loop condition `x` is a FP32 tensor [16, 128]; a while loop tests a scalar"),
    (constant_condition, "error: a compile-time condition", TypeCheckError,
     "the loop condition `True` is known at compile time"),
    (retyped_carry, "error: the carry changes type", TypeCheckError,
     "`s` is carried around the loop but changes type inside it"),
])
def test_while_loop_errors_name_the_users_line(kernel, marker, cls, fragment):
    with pytest.raises(cls) as info:
        kernel.frontend(torch.zeros(16, 128), torch.zeros(16, 128))
    err = info.value
    assert fragment in err.message
    assert err.span.file == __file__
    assert Path(__file__).read_text().splitlines()[err.span.line - 1].endswith(f"# {marker}")
