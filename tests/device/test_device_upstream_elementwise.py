"""Upstream's leaky ReLU and three-operand sums in device code: pl.tile.lrelu is TLRELU;
pl.tile.addc / subc / addsc / subsc, whose PTO instructions exist in pto-isa's CPU model
alone, are their first operation into scratch UB and a TADD; proven on pto-isa's CPU model
against the simulators.  pl.fmod, pl.tile.rem and pl.tile.prelu are refused at the line."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir import LoweringError
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

R, C = 16, 64


@pl.jit.incore
def sums(a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
         h: pl.Tensor[[R, C], pl.FP16], i: pl.Tensor[[R, C], pl.INT32],
         leaky: pl.Out[pl.Tensor[[R, C], pl.FP32]], leaky_h: pl.Out[pl.Tensor[[R, C], pl.FP16]],
         addc: pl.Out[pl.Tensor[[R, C], pl.FP32]], subc: pl.Out[pl.Tensor[[R, C], pl.FP32]],
         addsc: pl.Out[pl.Tensor[[R, C], pl.FP32]], subsc_i: pl.Out[pl.Tensor[[R, C], pl.INT32]],
         subc_h: pl.Out[pl.Tensor[[R, C], pl.FP16]]):
    x = pl.load(a, [0, 0], [R, C])
    y = pl.load(b, [0, 0], [R, C])
    g = pl.load(h, [0, 0], [R, C])
    n = pl.load(i, [0, 0], [R, C])
    leaky = pl.store(pl.tile.lrelu(x, 0.3), [0, 0], leaky)
    leaky_h = pl.store(pl.tile.lrelu(g, 0.1), [0, 0], leaky_h)
    addc = pl.store(pl.tile.addc(x, y, x), [0, 0], addc)
    subc = pl.store(pl.tile.subc(x, y, y), [0, 0], subc)
    addsc = pl.store(pl.tile.addsc(x, 0.1, y), [0, 0], addsc)
    subsc_i = pl.store(pl.tile.subsc(n, 7, n), [0, 0], subsc_i)
    subc_h = pl.store(pl.tile.subc(g, g, g), [0, 0], subc_h)
    return leaky, leaky_h, addc, subc, addsc, subsc_i, subc_h


def _arguments():
    g = torch.Generator().manual_seed(31)
    a = torch.randn(R, C, generator=g) * 1e4
    b = torch.randn(R, C, generator=g)
    a[0, :4] = torch.tensor([0.0, -0.0, float("inf"), float("-inf")])
    h = (torch.randn(R, C, generator=g) * 100).half()
    i = torch.randint(-2**31, 2**31 - 1, (R, C), generator=g, dtype=torch.int32)
    outs = [torch.zeros(R, C), torch.zeros(R, C, dtype=torch.float16),
            *(torch.zeros(R, C) for _ in range(3)), torch.zeros(R, C, dtype=torch.int32),
            torch.zeros(R, C, dtype=torch.float16)]
    return [a, b, h, i, *outs]


def _incore(program, platform: str):
    (fn,) = [f for f in lower(program, get_platform(platform)).functions
             if f.func_type is FunctionType.InCore]
    return fn


def test_lrelu_is_tlrelu_and_a_three_operand_sum_is_two_instructions():
    source = device_kernel(_incore(sums.frontend(*_arguments()), "a2a3cpu")).cpp
    assert source.count("TLRELU(") == 2
    assert source.count("TADD(") == 6 and source.count("TSUB(") == 2
    assert source.count("TADDS(") == 1 and source.count("TSUBS(") == 1
    assert "TADDC" not in source and "TSUBC" not in source


def test_fmod_rem_and_prelu_are_refused_at_their_line():
    @pl.jit.incore
    def each(a: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        x = pl.load(a, [0, 0], [R, C])
        out = pl.store(pl.tile.prelu(x, x), [0, 0], out)
        return out

    @pl.jit.incore
    def bf16(a: pl.Tensor[[R, C], pl.BF16], out: pl.Out[pl.Tensor[[R, C], pl.BF16]]):
        out = pl.store(pl.tile.lrelu(pl.load(a, [0, 0], [R, C]), 0.5), [0, 0], out)
        return out

    cases = [(each.frontend(torch.zeros(R, C), torch.zeros(R, C)), "TPRELU selects through"),
             (bf16.frontend(*(torch.zeros(R, C, dtype=torch.bfloat16),) * 2),
              "TLRELU takes FP16 and FP32 tiles, not BF16")]
    for program, message in cases:
        for platform in ("a2a3cpu", "a5cpu"):
            with pytest.raises(LoweringError, match=message) as info:
                device_kernel(_incore(program, platform))
            assert "test_device_upstream_elementwise.py" in str(info.value)


# Slow: a CPU-model build and a simulator build per platform.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_lrelu_and_the_sums_on_the_cpu_model_are_the_simulators(platform):
    leaky, leaky_h, addc, subc, addsc, subsc_i, subc_h = outputs_agreeing_with_the_simulator(
        sums, _arguments, 4, platform)
    a, b, h, i = _arguments()[:4]
    assert torch.equal(leaky, torch.where(a > 0, a, a * 0.3))
    assert torch.equal(addc, (a + b) + a) and torch.equal(subc, (a - b) + b)
    assert torch.equal(addsc, (a + 0.1) + b)
    assert torch.equal(subsc_i.long() & 0xFFFFFFFF, (2 * i.long() - 7) & 0xFFFFFFFF)
    assert torch.equal(subc_h, (h - h) + h)
    assert torch.equal(leaky_h, torch.where(h > 0, h.float(), h.float() * 0.0999755859375).half())
