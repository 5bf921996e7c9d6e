"""Cube device code: a transposed matmul operand is loaded column-major (Layout::DN) into ZN
fractals, and cube tiles that are not whole fractals are padded to them with zeros."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator, toolchain_or_skip

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir.errors import LoweringError
from pypto.ir.types import FunctionType
from pypto.platform import get_platform
from pypto.runtime import RunConfig

# The shapes are unaligned on purpose (whole fractals are what is tested): hints expected.
pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

@pl.jit
def both_transposed(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b, a_trans=True, b_trans=True)
    return c


@pl.jit
def b_transposed(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b, b_trans=True)
    return c


@pl.jit
def plain(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b)
    return c


@pl.jit.incore
def one_tile_used_both_ways(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
    acc = pl.matmul(pl.move(t, pl.Mem.Left), pl.move(t, pl.Mem.Right), b_trans=True)
    c = pl.store(acc, [0, 0], c)
    return c


def _quantized(*shape):
    """Multiples of 2^-6 in [-1, 1]: every product and partial sum is exact in FP32."""
    return torch.randint(-64, 65, shape).half() / 64


def _device_source(kernel, *args, platform="a5cpu") -> str:
    program = kernel.frontend(*args)
    (fn,) = [f for f in lower(program, get_platform(platform)).functions
             if f.func_type is FunctionType.InCore]
    return device_kernel(fn).cpp


def test_a_transposed_operand_is_loaded_from_a_column_major_view_into_zn_fractals():
    cpp = _device_source(b_transposed, _quantized(21, 40), _quantized(45, 40),
                         torch.empty(21, 45))
    # b is [45, 40] in memory; the Right operand is its transpose, [40, 45] valid in 48 x 48.
    assert ("GlobalTensor<half, Shape<1, 1, 1, 40, 45>, Stride<1, 1, 1, DYNAMIC, DYNAMIC>, "
            "Layout::DN> b_window(") in cpp
    assert "{col_stride(b), row_stride(b)}" in cpp
    assert ("Tile<TileType::Mat, half, 48, 48, BLayout::RowMajor, 40, 45, SLayout::ColMajor, "
            "TileConfig::fractalABSize, PadValue::Zero> b_mat_0_pad_zero;") in cpp
    assert "TileRight<half, 48, 48, 40, 45> b_right_0;" in cpp
    assert "TMATMUL(matmul_0_acc_0, a_left_0, b_right_0);" in cpp


def test_cube_tiles_that_are_not_whole_fractals_are_loaded_with_zero_padding():
    cpp = _device_source(b_transposed, _quantized(21, 40), _quantized(45, 40),
                         torch.empty(21, 45))
    # [21, 40] is [32, 48] in whole 16 x 16 fractals; the zeros keep the padded K neutral.
    assert ("Tile<TileType::Mat, half, 32, 48, BLayout::ColMajor, 21, 40, SLayout::RowMajor, "
            "TileConfig::fractalABSize, PadValue::Zero> a_mat_0_pad_zero;") in cpp
    assert "TLOAD(a_mat_0_pad_zero, a_window);" in cpp
    assert "TileAcc<float, 32, 48, 21, 45> matmul_0_acc_0;" in cpp


def _int8(*shape):
    return torch.randint(-128, 128, shape, generator=torch.Generator().manual_seed(3),
                         dtype=torch.int8)


def test_an_int8_right_tile_pads_k_to_a_block_and_n_to_a_fractal():
    # K's 32 bytes are the fractal's long side in both operands; N only needs 16, the Acc's.
    cpp = _device_source(plain, _int8(16, 16), _int8(16, 20),
                         torch.empty(16, 20, dtype=torch.int32))
    assert "TileLeft<int8_t, 16, 32, 16, 16> a_left_0;" in cpp
    assert "TileRight<int8_t, 32, 32, 16, 20> b_right_0;" in cpp
    assert "TileAcc<int32_t, 16, 32, 16, 20> matmul_0_acc_0;" in cpp


def test_a_tile_moved_to_a_transposed_and_a_plain_operand_is_refused_at_its_line():
    with pytest.raises(LoweringError, match="only one of them is a transposed matmul operand") \
            as info:
        _device_source(one_tile_used_both_ways, _quantized(32, 32), torch.empty(32, 32))
    assert "test_device_matmul.py" in str(info.value)


# Slow: two CPU-model compiles (the first use of zig c++ builds its libc++: minutes).
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_transposed_unaligned_operands_multiply_exactly_on_the_cpu_model(platform):
    toolchain_or_skip(platform)
    a, b = _quantized(40, 21), _quantized(45, 40)
    c = torch.empty(21, 45)
    both_transposed(a, b, c, config=RunConfig(platform=platform))
    assert torch.equal(c, a.float().T @ b.float().T)


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
@pytest.mark.parametrize(("k", "n"), [(16, 16), (40, 20), (32, 48)])
def test_int8_operands_whose_k_or_n_is_not_a_block_multiply_exactly_on_the_cpu_model(
        platform, k, n):
    (c,) = outputs_agreeing_with_the_simulator(
        plain, lambda: [_int8(16, k), _int8(k, n), torch.empty(16, n, dtype=torch.int32)], 2,
        platform)
    assert torch.equal(c, (_int8(16, k).long() @ _int8(k, n).long()).int())
