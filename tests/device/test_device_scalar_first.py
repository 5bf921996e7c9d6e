"""Scalar-first binary operators in device code: each is its instruction's scalar form with
the operands swapped where the operator commutes (max and min too: both propagate NaN from
either side on the device), a negation and an add for `s - x`, TDIVS's own scalar-first
form for `s / x`; proven on pto-isa's CPU model against the simulators."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


@pl.jit
def scalar_first(x: pl.Tensor, n: pl.Tensor, hi: pl.Out[pl.Tensor], lo: pl.Out[pl.Tensor],
                 less: pl.Out[pl.Tensor], over: pl.Out[pl.Tensor], ihi: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        hi[:] = pl.maximum(0.25, x)
        lo[:] = pl.minimum(-0.5, x)
        less[:] = pl.sub(3.0, x)
        over[:] = pl.div(2.0, x)
        ihi[:] = pl.maximum(7, n)
    return hi, lo, less, over, ihi


def _arguments():
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(16, 64, generator=generator)
    n = torch.randint(-20, 20, (16, 64), generator=generator, dtype=torch.int32)
    return [x, n, *(torch.zeros(16, 64) for _ in range(4)), torch.zeros(16, 64, dtype=torch.int32)]


def test_max_and_min_with_the_scalar_first_are_their_scalar_forms():
    program = scalar_first.frontend(*_arguments())
    (fn,) = [f for f in lower(program, get_platform("a5cpu")).functions
             if f.func_type is FunctionType.InCore]
    source = device_kernel(fn).cpp
    assert source.count("TMAXS(") == 2 and source.count("TMINS(") == 1


# Slow: a CPU-model build and a simulator build per platform.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_scalar_first_operators_on_the_cpu_model_are_the_simulators(platform):
    hi, lo, less, over, ihi = outputs_agreeing_with_the_simulator(
        scalar_first, _arguments, 2, platform)
    x, n = _arguments()[:2]
    assert torch.equal(hi, x.clamp(min=0.25)) and torch.equal(lo, x.clamp(max=-0.5))
    assert torch.equal(less, 3.0 - x) and torch.equal(over, 2.0 / x)
    assert torch.equal(ihi, n.clamp(min=7))
