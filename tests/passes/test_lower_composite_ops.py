"""LowerCompositeOps: each tile pl.sin / pl.cos becomes its expansion's primitive operators
(ir/ops/trig.py), at the user's line; programs without one come out unchanged."""

from __future__ import annotations

import math

import pytest
import torch
from corpus import CORPUS
from sim_and_torch import sim_and_torch

import pypto.language as pl
from pypto.ir.nodes import Assign, Call, Const
from pypto.ir.ops import get_op
from pypto.ir.types import FunctionType
from pypto.ir.visitor import statements
from pypto.passes import (
    FlattenCallExpr,
    LowerCompositeOps,
    OutlineIncoreScopes,
    PassContext,
    PassManager,
    TensorToTile,
    default_pipeline,
)
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")  # small tiles

CONTEXT = PassContext(get_platform("a2a3sim").backend)


def _tile_level(program):
    """The program as LowerCompositeOps receives it."""
    return PassManager([OutlineIncoreScopes(), FlattenCallExpr(), TensorToTile()]).run(
        program, CONTEXT)


def _kernel(program):
    (fn,) = [f for f in program.functions if f.func_type is FunctionType.InCore]
    return fn


@pl.jit.incore
def sine(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 64])
    y = pl.sin(t)
    out = pl.store(y, [0, 0], out)
    return out


def _sine_program():
    return sine.frontend(torch.zeros(16, 64), torch.zeros(16, 64))


def test_it_runs_after_tensor_to_tile_and_before_anything_is_placed():
    names = [p.name for p in default_pipeline().passes]
    assert names.index("LowerCompositeOps") == names.index("TensorToTile") + 1
    assert names.index("LowerCompositeOps") < names.index("LegalizeTileCast")


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_a_program_without_a_composite_operator_comes_out_unchanged(name):
    kernel, make_args = CORPUS[name]
    program = _tile_level(kernel.frontend(*make_args()))
    assert LowerCompositeOps().run(program, CONTEXT) == program


def test_a_sine_becomes_the_expansion_at_its_line_and_binds_the_users_name():
    program = _tile_level(_sine_program())
    before = {s.targets[0].name: s for s in statements(_kernel(program).body)
              if isinstance(s, Assign)}
    lowered = _kernel(LowerCompositeOps().run(program, CONTEXT))
    assigns = [s for s in statements(lowered.body) if isinstance(s, Assign)]
    calls = [s for s in assigns if isinstance(s.value, Call) and s.value.op != "load"
             and s.value.op != "store"]
    steps = get_op("sin").expansion
    assert [s.value.op for s in calls] == [step.op for step in steps]
    assert calls[-1].targets[0].name == "y"
    consts = [a.value for s in calls for a in s.value.args if isinstance(a, Const)]
    assert consts == [a for step in steps for a in step.args if isinstance(a, float)]
    assert all(s.span == before["y"].span for s in calls)
    # one name per role of the expansion, rebound where the steps rebind it
    assert sorted({s.targets[0].name for s in calls}) == sorted(
        ["y"] + [f"y_{role}_0" for role in ("k", "ki", "kp", "t", "s", "u", "p")])


def test_running_it_again_changes_nothing():
    once = LowerCompositeOps().run(_tile_level(_sine_program()), CONTEXT)
    assert LowerCompositeOps().run(once, CONTEXT) == once


@pl.jit.incore
def sine_in_a_loop(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 64])
    for i in pl.range(4):
        t = pl.cos(pl.sin(t))  # carried around the loop
        out = pl.store(t, [i * 16, 0], out)
    return out


def test_a_value_carried_around_a_loop_through_sin_and_cos_agrees_with_torch():
    x = (torch.rand(16, 64, generator=torch.Generator().manual_seed(4)) - 0.5) * 100
    sim, host = sim_and_torch(sine_in_a_loop, [x, torch.zeros(64, 64)], "a2a3sim")
    assert torch.equal(sim[1], host[1])
    want = x.double()
    for i in range(4):
        want = torch.cos(torch.sin(want))
        assert (sim[1][i * 16:(i + 1) * 16].double() - want).abs().max() < 1e-6


@pl.jit
def wide_sine(x: pl.Tensor[[64, 2048], pl.FP32], out: pl.Out[pl.Tensor[[64, 2048], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.sin(x)
    return out


def test_tensor_to_tile_makes_room_in_each_chunk_for_the_expansions_buffers():
    # 64 x 2048 FP32 is 512 KiB: a chunk of its input and output alone could be 8 rows
    # (128 KiB of 192), which the expansion's seven more buffers would overflow.
    x = (torch.rand(64, 2048, generator=torch.Generator().manual_seed(9)) - 0.5) * 2 * math.pi
    sim, host = sim_and_torch(wide_sine, [x, torch.zeros(64, 2048)], "a2a3sim")
    assert torch.equal(sim[1], host[1])
    assert (sim[1].double() - torch.sin(x.double())).abs().max() < 2e-7
