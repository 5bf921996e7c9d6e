"""pl.set_validshape in device code: a TMOV of the whole tile (no data changes; the result's
stores take its new valid region), proven on pto-isa's CPU model against the simulators."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

# A 16 x 64 FP32 tile is narrower than A2/A3 likes: its row-width hint is expected.
pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


@pl.jit.incore
def widened(x: pl.Tensor[[16, 48], pl.FP32], maxima: pl.Out[pl.Tensor[[16, 1], pl.FP32]],
            whole: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 64], valid_shape=[16, 48])
    full = pl.set_validshape(pl.fillpad(t, pl.PadValue.min), 16, 64)
    maxima = pl.store(pl.row_max(full, pl.create_tile([16, 64], pl.FP32)), [0, 0], maxima)
    whole = pl.store(full, [0, 0], whole)
    return maxima, whole


def _arguments():
    x = -torch.rand(16, 48, generator=torch.Generator().manual_seed(9)) - 1.0
    return [x, torch.zeros(16, 1), torch.zeros(16, 64)]


def test_set_validshape_is_a_move_of_the_whole_tile():
    program = widened.frontend(*_arguments())
    (fn,) = [f for f in lower(program, get_platform("a5cpu")).functions
             if f.func_type is FunctionType.InCore]
    assert "TMOV(" in device_kernel(fn).cpp


# Slow: a CPU-model build and a simulator build per platform.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_set_validshape_on_the_cpu_model_is_the_simulators(platform):
    maxima, whole = outputs_agreeing_with_the_simulator(
        widened, _arguments, 1, platform)
    x = _arguments()[0]
    assert torch.equal(maxima, x.amax(dim=1, keepdim=True))
    assert torch.equal(whole[:, :48], x) and (whole[:, 48:] == float("-inf")).all()
