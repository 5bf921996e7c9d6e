"""pl.sin / pl.cos in device code: their expansion's TMULS / TADDS / TSUB / TADD / TMUL and
TCVT with the recipe's rounding modes, proven on pto-isa's CPU model against the
simulators."""

from __future__ import annotations

import math

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

R, C = 16, 64


@pl.jit.incore
def trig(a: pl.Tensor[[R, C], pl.FP32], s: pl.Out[pl.Tensor[[R, C], pl.FP32]],
         c: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    x = pl.load(a, [0, 0], [R, C])
    s = pl.store(pl.tile.sin(x), [0, 0], s)
    c = pl.store(pl.tile.cos(x), [0, 0], c)
    return s, c


def _arguments():
    g = torch.Generator().manual_seed(5)
    a = (torch.rand(R, C, generator=g) * 2 - 1) * 2 * math.pi * 1024
    a.view(-1)[:8] = torch.tensor([float("nan"), 0.0, -0.0, 1.5, -2.5, math.pi, 1e-40, 3e4])
    return [a, torch.zeros(R, C), torch.zeros(R, C)]


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_the_casts_round_as_the_recipe_says(platform):
    (fn,) = [f for f in lower(trig.frontend(*_arguments()), get_platform(platform)).functions
             if f.func_type is FunctionType.InCore]
    source = device_kernel(fn).cpp
    modes = [m for m in ("CAST_ROUND", "CAST_RINT", "CAST_FLOOR", "CAST_NONE")
             for _ in range(source.count(f"RoundMode::{m}"))]
    # sin: k ROUND, floor(k / 2) FLOOR; cos: k RINT, FLOOR; back to FP32: NONE, twice each
    assert sorted(modes) == sorted(["CAST_ROUND", "CAST_RINT"] + ["CAST_FLOOR"] * 2
                                   + ["CAST_NONE"] * 4)
    assert "TSIN" not in source and "TCOS" not in source


# Slow: a CPU-model build (minutes on a cold compiler cache) and a simulator build per platform.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_sin_and_cos_on_the_cpu_model_are_the_simulators(platform):
    s, c = outputs_agreeing_with_the_simulator(trig, _arguments, 1, platform)
    x = _arguments()[0].double()
    assert s[0, 0].isnan() and c[0, 0].isnan()
    inside = x.abs() <= 2 * math.pi * 1024
    assert (s.double() - torch.sin(x)).abs()[inside].max() < 2e-7
    assert (c.double() - torch.cos(x)).abs()[inside].max() < 2e-7
