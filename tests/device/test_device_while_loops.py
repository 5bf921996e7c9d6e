"""While loops in device code: a C++ `while` of the condition's scalar code, synchronised
as a loop of unknown trip count (the back edge included); proven on pto-isa's CPU model
against the simulators."""

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


@pl.jit.incore
def grown(x: pl.Tensor[[64, 128], pl.FP32], limit: pl.Scalar[pl.FP32], n: pl.Scalar[pl.INDEX],
          out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    for i in pl.range(4):
        t = pl.load(x, [i * 16, 0], [16, 128])
        for (acc,) in pl.while_(init_values=(t,)):
            pl.cond(acc[0, 0] < limit)  # a vector result read by the scalar unit
            row = pl.yield_(pl.add(acc, t))
        out = pl.store(row, [i * 16, 0], out)
    for (j,) in pl.while_(init_values=(0,)):
        pl.cond(j < n)
        for i in pl.range(4):
            u = pl.load(out, [i * 16, 0], [16, 128])
            out = pl.store(pl.mul(u, 0.5), [i * 16, 0], out)
        _j = pl.yield_(j + 1)
    return out


def _arguments(n: int = 2):
    def make():
        x = torch.rand(64, 128, generator=torch.Generator().manual_seed(9)) + 0.5
        return [x, 4.0, n, torch.zeros(64, 128)]
    return make


def _by_hand(x: torch.Tensor, limit: float, n: int) -> torch.Tensor:
    out = torch.zeros_like(x)
    for i in range(4):
        t = x[i * 16:(i + 1) * 16]
        acc = t.clone()
        while acc[0, 0] < limit:
            acc = acc + t
        out[i * 16:(i + 1) * 16] = acc
    for _ in range(n):
        out = out * 0.5
    return out


def test_a_while_loop_is_a_cpp_while_synchronised_at_its_back_edge():
    (fn,) = [f for f in lower(grown.frontend(*_arguments()()), get_platform("a5cpu")).functions
             if f.func_type is FunctionType.InCore]
    source = device_kernel(fn).cpp
    assert source.count("while (") == 2
    loop = source[source.index("while ((read_0 < limit))"):]
    loop = loop[:loop.index("\n        }")]
    # the next iteration's TADD waits for this iteration's scalar read of the sum
    assert loop.rstrip().endswith("wait_flag(PIPE_S, PIPE_V, EVENT_ID0);")


# Slow: a CPU-model build and a simulator build per platform.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
@pytest.mark.parametrize("n", [0, 2])
def test_while_loops_on_the_cpu_model_are_the_simulators(platform, n):
    (out,) = outputs_agreeing_with_the_simulator(grown, _arguments(n), 3, platform)
    assert torch.equal(out, _by_hand(*_arguments(n)()[:3]))
