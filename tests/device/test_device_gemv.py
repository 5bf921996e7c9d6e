"""pl.tile.gemv / pl.tile.gemv_acc in device code: TGEMV / TGEMV_ACC of a one-row Left tile,
proven on pto-isa's CPU model against the simulators (and the M = 1 matmul)."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator
from gemv_programs import gemv_arguments, gemv_forms

from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


def test_gemv_and_gemv_acc_are_tgemv_and_tgemv_acc():
    program = gemv_forms.frontend(*gemv_arguments(torch.float16, 64, 32))
    (fn,) = [f for f in lower(program, get_platform("a2a3cpu")).functions
             if f.func_type is FunctionType.InCore]
    source = device_kernel(fn).cpp
    assert source.count("TGEMV(") == 1 and source.count("TGEMV_ACC(") == 1
    assert source.count("TMATMUL(") == 1


# Slow: a CPU-model build and a simulator build per platform and dtype.  The CPU model
# sums a matmul with fma and adds acc last (cpu/TMatmul.hpp), so the float operands are
# exact ones: every order gives the same bits (docs/numerics.md, the CPU-model table's matmul row).
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int8])
def test_gemv_on_the_cpu_model_is_the_simulators(platform, dtype):
    once, twice, product = outputs_agreeing_with_the_simulator(
        gemv_forms, lambda: gemv_arguments(dtype, 96, 64, exact=True), 2, platform)
    v, m = gemv_arguments(dtype, 96, 64, exact=True)[:2]
    wide = torch.int64 if dtype == torch.int8 else torch.float64
    assert torch.equal(once, product) and torch.equal(once, (v.to(wide) @ m.to(wide)).to(
        once.dtype))
    assert torch.equal(twice, 2 * once)


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_an_int8_gemv_whose_k_and_n_are_not_blocks_is_exact_on_the_cpu_model(platform):
    # K = 40 pads to 64 in both operands; N = 48 pads to a fractal (16), not a block (32).
    once, twice, product = outputs_agreeing_with_the_simulator(
        gemv_forms, lambda: gemv_arguments(torch.int8, 40, 48), 2, platform)
    v, m = gemv_arguments(torch.int8, 40, 48)[:2]
    assert torch.equal(once, product) and torch.equal(once, (v.long() @ m.long()).int())
    assert torch.equal(twice, 2 * once)
