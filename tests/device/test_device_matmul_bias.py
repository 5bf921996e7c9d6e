"""pl.tile.matmul_bias / pl.tile.gemv_bias in device code: the bias row moved from Mat into
the bias table (TMOV) and TMATMUL_BIAS / TGEMV_BIAS, proven on pto-isa's CPU model against
the simulators and the torch semantics."""

from __future__ import annotations

import pytest
import torch
from bias_programs import bias_arguments, bias_forms
from cpu_models import outputs_agreeing_with_the_simulator, toolchain_or_skip

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.debug import torch_runtime
from pypto.ir import LoweringError
from pypto.ir.types import FunctionType
from pypto.platform import get_platform
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


def test_bias_forms_are_tmatmul_bias_and_tgemv_bias_reading_the_moved_row():
    program = bias_forms.frontend(*bias_arguments(torch.float16, 16, 32, 64))
    (fn,) = [f for f in lower(program, get_platform("a2a3cpu")).functions
             if f.func_type is FunctionType.InCore]
    source = device_kernel(fn).cpp
    assert "Tile<TileType::Bias, float, 1, 64, BLayout::RowMajor, 1, 64> row;" in source
    assert source.count("TMOV(row, ") == 1
    assert source.count("TMATMUL_BIAS(") == 1 and source.count("TGEMV_BIAS(") == 1


# Slow: a CPU-model build and a simulator build per platform and dtype.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int8])
def test_bias_forms_on_the_cpu_model_are_the_simulators(platform, dtype):
    arguments = bias_arguments(dtype, 32, 48, 64, exact=True)
    a, b, bias, v = arguments[:4]
    with_bias, gemv, product = outputs_agreeing_with_the_simulator(
        bias_forms, lambda: bias_arguments(dtype, 32, 48, 64, exact=True), 4, platform)
    assert torch.equal(with_bias, torch_runtime.tile_matmul_bias(a, b, bias))
    assert torch.equal(gemv, torch_runtime.tile_gemv_bias(v, b, bias))
    assert not torch.equal(with_bias, product)


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_the_cpu_model_adds_the_bias_after_the_last_k_step(platform):
    def arguments():
        a, b, bias, v, *outputs = bias_arguments(torch.float32, 16, 32, 32)
        a.zero_(), b.zero_(), v.zero_()
        a[0, 0], a[0, 1], v[0, 0], v[0, 1] = 1, 1, 1, 1
        b[0, :], b[1, :] = 1, -1
        bias.fill_(2.0**-30)
        return [a, b, bias, v, *outputs]

    with_bias, gemv, _ = outputs_agreeing_with_the_simulator(bias_forms, arguments, 4,
                                                             platform)
    assert torch.equal(gemv, torch.full((1, 32), 2.0**-30))
    assert torch.equal(with_bias[0], gemv[0])


@pl.jit.incore
def bias_beside_vec(a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
                    bias: pl.Tensor[[1, 32], pl.FP32], x: pl.Tensor[[16, 32], pl.FP32],
                    c: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
                    d: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    left = pl.move(pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat), pl.Mem.Left)
    right = pl.move(pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat), pl.Mem.Right)
    row = pl.move(pl.load(bias, [0, 0], [1, 32], target_memory=pl.Mem.Mat), pl.Mem.Bias)
    c = pl.store(pl.tile.matmul_bias(left, right, row), [0, 0], c)
    t = pl.load(x, [0, 0], [16, 32])
    d = pl.store(pl.add(t, t), [0, 0], d)
    return c, d


def test_bias_beside_vec_tiles_is_refused_on_the_cpu_model_at_the_bias_move():
    toolchain_or_skip("a2a3cpu")  # the build locates the CPU model's compiler first
    args = (torch.zeros(16, 32).half(), torch.zeros(32, 32).half(), torch.zeros(1, 32),
            torch.zeros(16, 32), torch.zeros(16, 32), torch.zeros(16, 32))
    bias_beside_vec(*args, config=RunConfig(platform="a2a3sim"))  # the simulator runs it
    with pytest.raises(LoweringError) as info:
        bias_beside_vec(*args, config=RunConfig(platform="a2a3cpu"))
    message = str(info.value)
    assert "both Vec and Bias tiles" in message and "places a Bias tile in UB" in message
    assert "test_device_matmul_bias.py:" in message, message
