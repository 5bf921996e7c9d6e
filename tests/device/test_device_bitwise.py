"""pl.xor in device code: TXOR / TXORS with a tmp tile in scratch UB above every placed tile,
proven on pto-isa's CPU model against the simulators."""

from __future__ import annotations

import re

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
def xors(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, both: pl.Out[pl.Tensor],
         scalar: pl.Out[pl.Tensor], first: pl.Out[pl.Tensor], wide: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        both[:] = pl.xor(a, b)
        scalar[:] = pl.xor(a, 0x5A5A)
        first[:] = pl.xor(-1, b)
        wide[:] = pl.xor(c, 0x0F0F0F0F)
    return both, scalar, first, wide


def _arguments():
    generator = torch.Generator().manual_seed(3)
    a, b = (torch.randint(-32768, 32768, (16, 64), generator=generator, dtype=torch.int16)
            for _ in range(2))
    c = torch.randint(-2**31, 2**31 - 1, (16, 64), generator=generator, dtype=torch.int32)
    outs = [torch.zeros(16, 64, dtype=torch.int16) for _ in range(3)]
    return [a, b, c, *outs, torch.zeros(16, 64, dtype=torch.int32)]


def test_xor_passes_a_tmp_tile_of_its_result_type_above_every_placed_tile():
    program = xors.frontend(*_arguments())
    (fn,) = [f for f in lower(program, get_platform("a2a3cpu")).functions
             if f.func_type is FunctionType.InCore]
    source = device_kernel(fn).cpp
    assert len(re.findall(r", xor_tmp(_1)?\);", source)) == 4  # one INT16, one INT32 tmp
    assert "TASSIGN(xor_tmp, " in source and "TASSIGN(xor_tmp_1, " in source
    assert "TXORS(" in source and "TXOR(" in source


# Slow: a CPU-model build and a simulator build per platform.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_xor_on_the_cpu_model_is_the_simulators(platform):
    both, scalar, first, wide = outputs_agreeing_with_the_simulator(
        xors, _arguments, 3, platform)
    a, b, c = _arguments()[:3]
    assert torch.equal(both, a ^ b) and torch.equal(scalar, a ^ 0x5A5A)
    assert torch.equal(first, ~b) and torch.equal(wide, c ^ 0x0F0F0F0F)
