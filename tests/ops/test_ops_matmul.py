"""Matmul: FP16 inputs accumulate in FP32, K-blocked loops are deterministic, and the
cube's buffers (Mat, Left, Right, Acc) are placed and checked per backend."""

from __future__ import annotations

import pytest
import torch
from gemv_programs import gemv_arguments, gemv_forms

import pypto.language as pl
from pypto.debug import torch_runtime
from pypto.ir import LoweringError, TypeCheckError
from pypto.runtime import RunConfig

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py

PLATFORMS = ["a2a3sim", "a5sim"]


@pl.jit.incore
def matmul_128(a: pl.Tensor[[128, 128], pl.FP16], b: pl.Tensor[[128, 128], pl.FP16],
               c: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    a_mat = pl.load(a, [0, 0], [128, 128], target_memory=pl.Mem.Mat)
    b_mat = pl.load(b, [0, 0], [128, 128], target_memory=pl.Mem.Mat)
    acc = pl.matmul(pl.move(a_mat, pl.Mem.Left), pl.move(b_mat, pl.Mem.Right))
    c = pl.store(acc, [0, 0], c)
    return c


def _fp32_operands(m, k, n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fp16_matmul_passes_at_fp16_tolerance_and_fails_at_fp32_tolerance(platform):
    a32, b32 = _fp32_operands(128, 128, 128, 31)
    reference = a32 @ b32  # the FP32 computation the FP16 kernel stands in for
    c = torch.empty(128, 128)
    matmul_128(a32.half(), b32.half(), c, config=RunConfig(platform=platform))
    torch.testing.assert_close(c, reference, rtol=1e-2, atol=1e-2)
    with pytest.raises(AssertionError):
        torch.testing.assert_close(c, reference, rtol=1e-5, atol=1e-5)
    # The kernel itself is exact up to FP32 summation order: the inputs' rounding is the gap.
    torch.testing.assert_close(c, a32.half().float() @ b32.half().float(), rtol=1e-5, atol=1e-4)


K_BLOCK = 128


@pl.jit.incore
def matmul_k_blocked(a: pl.Tensor[[128, 512], pl.FP16], b: pl.Tensor[[512, 128], pl.FP16],
                     c: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    a0 = pl.load(a, [0, 0], [128, K_BLOCK], target_memory=pl.Mem.Mat)
    b0 = pl.load(b, [0, 0], [K_BLOCK, 128], target_memory=pl.Mem.Mat)
    acc = pl.matmul(pl.move(a0, pl.Mem.Left), pl.move(b0, pl.Mem.Right))
    for k in pl.range(K_BLOCK, 512, K_BLOCK):
        ak = pl.load(a, [0, k], [128, K_BLOCK], target_memory=pl.Mem.Mat)
        bk = pl.load(b, [k, 0], [K_BLOCK, 128], target_memory=pl.Mem.Mat)
        acc = pl.matmul_acc(acc, pl.move(ak, pl.Mem.Left), pl.move(bk, pl.Mem.Right))
    c = pl.store(acc, [0, 0], c)
    return c


def _k_order_fp32(a16, b16):
    """FP32 accumulation in K order, the documented matmul numerics."""
    out = torch.zeros(a16.shape[0], b16.shape[1])
    for k in range(a16.shape[1]):
        out = out + a16[:, k:k + 1].float() * b16[k:k + 1, :].float()
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_k_blocked_matmul_acc_is_bitwise_identical_across_runs(platform):
    a32, b32 = _fp32_operands(128, 512, 128, 32)
    a16, b16 = a32.half(), b32.half()
    runs = []
    for seed in (None, 1, 2):
        c = torch.empty(128, 128)
        matmul_k_blocked(a16, b16, c, config=RunConfig(platform=platform, schedule_seed=seed))
        runs.append(c)
    assert all(torch.equal(r.view(torch.int32), runs[0].view(torch.int32)) for r in runs)
    assert torch.equal(runs[0], _k_order_fp32(a16, b16))


@pl.jit.incore
def matmul_transposed(at: pl.Tensor[[32, 16], pl.BF16], bt: pl.Tensor[[24, 32], pl.BF16],
                      c: pl.Out[pl.Tensor[[16, 24], pl.FP32]]):
    a_mat = pl.load(at, [0, 0], [32, 16], target_memory=pl.Mem.Mat)
    b_mat = pl.load(bt, [0, 0], [24, 32], target_memory=pl.Mem.Mat)
    acc = pl.matmul(pl.move(a_mat, pl.Mem.Left), pl.move(b_mat, pl.Mem.Right), a_trans=True,
                    b_trans=True)
    c = pl.store(acc, [0, 0], c)
    return c


@pytest.mark.parametrize("platform", PLATFORMS)
def test_transposed_bf16_operands(platform):
    a32, b32 = _fp32_operands(16, 32, 24, 33)
    a16, b16 = a32.bfloat16(), b32.bfloat16()
    c = torch.empty(16, 24)
    matmul_transposed(a16.T.contiguous(), b16.T.contiguous(), c,
                      config=RunConfig(platform=platform))
    assert torch.equal(c, _k_order_fp32(a16, b16))


@pl.jit
def tensor_matmul(a: pl.Tensor[[256, 512], pl.FP16], b: pl.Tensor[[512, 192], pl.FP16],
                  c: pl.Out[pl.Tensor[[256, 192], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b, out_dtype=pl.FP16)
    return c


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensor_level_matmul_is_lowered_whole_k(platform):
    a32, b32 = _fp32_operands(256, 512, 192, 34)
    a16, b16 = a32.half(), b32.half()
    c = torch.empty(256, 192, dtype=torch.float16)
    tensor_matmul(a16, b16, c, config=RunConfig(platform=platform))
    assert torch.equal(c, _k_order_fp32(a16, b16).half())  # one rounding at the end
    text = tensor_matmul.lower(a16, b16, c, config=RunConfig(platform=platform)).as_python()
    assert "pl.Mem.Left" in text and "pl.Mem.Right" in text and "pl.Mem.Acc" in text
    assert "[512, " in text  # K is never split


@pl.jit
def tensor_matmul_too_long(a: pl.Tensor[[16, 65536], pl.FP16],
                           b: pl.Tensor[[65536, 16], pl.FP16],
                           c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b)
    return c


def test_tensor_matmul_whose_k_does_not_fit_asks_for_tiles():
    a, b = torch.zeros(16, 65536, dtype=torch.float16), torch.zeros(65536, 16,
                                                                   dtype=torch.float16)
    with pytest.raises(LoweringError, match="matmul_acc"):
        tensor_matmul_too_long.lower(a, b, torch.zeros(16, 16))


@pl.jit.incore
def matmul_of_vec_tiles(a: pl.Tensor[[16, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16],
                        c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    x = pl.load(a, [0, 0], [16, 16])
    y = pl.load(b, [0, 0], [16, 16])
    c = pl.store(pl.matmul(x, y), [0, 0], c)
    return c


def test_matmul_of_vec_tiles_names_the_operand_and_the_fix():
    a = torch.zeros(16, 16, dtype=torch.float16)
    with pytest.raises(LoweringError) as info:
        matmul_of_vec_tiles.lower(a, a, torch.zeros(16, 16))
    message = str(info.value)
    assert "test_ops_matmul.py" in message and "lhs" in message and "Left" in message
    assert "pl.Mem.Mat" in message


@pl.jit.incore
def matmul_bias(a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 64], pl.FP16],
                bias: pl.Tensor[[1, 64], pl.FP32], c: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    a_mat = pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat)
    b_mat = pl.load(b, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
    acc = pl.matmul(pl.move(a_mat, pl.Mem.Left), pl.move(b_mat, pl.Mem.Right))
    y = pl.col_expand_add(pl.move(acc, pl.Mem.Vec), pl.load(bias, [0, 0], [1, 64]))
    c = pl.store(y, [0, 0], c)
    return c


def _bias_args():
    a32, b32 = _fp32_operands(16, 32, 64, 35)
    bias = torch.randn(1, 64, generator=torch.Generator().manual_seed(36))
    return a32.half(), b32.half(), bias


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_acc_to_vec_move_runs_on_both_backends(platform):
    # Ascend950 moves Acc to Vec by TMOV; Ascend910B has no such path and crosses from the
    # cube unit to the vector unit through global memory (TransferCubeToVector).
    a, b, bias = _bias_args()
    c = torch.empty(16, 64)
    matmul_bias(a, b, bias, c, config=RunConfig(platform=platform))
    assert torch.equal(c, _k_order_fp32(a, b) + bias)


# -- the matrix-vector forms (TGEMV / TGEMV_ACC)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int8])
def test_gemv_is_the_one_row_matmul_bit_for_bit(platform, dtype):
    v, m, once, twice, product = gemv_arguments(dtype, 96, 48)
    gemv_forms(v, m, once, twice, product, config=RunConfig(platform=platform))
    assert torch.equal(once, product) and torch.equal(once, torch_runtime.tile_gemv(v, m))
    assert torch.equal(twice, torch_runtime.tile_gemv_acc(once, v, m))
    if dtype == torch.int8:
        assert torch.equal(once, (v.long() @ m.long()).int())
    else:
        torch.testing.assert_close(once, v.float() @ m.float(), rtol=1e-5, atol=1e-4)


@pl.jit.incore
def gemv_of_rows(a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
                 c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    x = pl.move(pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat), pl.Mem.Left)
    y = pl.move(pl.load(b, [0, 0], [32, 16], target_memory=pl.Mem.Mat), pl.Mem.Right)
    c = pl.store(pl.tile.gemv(x, y), [0, 0], c)
    return c


@pl.jit
def gemv_of_tensors(a: pl.Tensor[[1, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
                    c: pl.Out[pl.Tensor[[1, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.tile.gemv(a, b)
    return c


@pytest.mark.parametrize("kernel, rows, says", [
    (gemv_of_rows, 16, ("[1, K] vector", "[16, 32] x [32, 16]", "pl.matmul")),
    (gemv_of_tensors, 1, ("multiplies tiles", "pl.matmul")),
])
def test_gemv_of_a_matrix_or_of_tensors_is_refused_at_the_line(kernel, rows, says):
    with pytest.raises(TypeCheckError) as info:
        kernel.lower(torch.zeros(rows, 32).half(), torch.zeros(32, 16).half(),
                     torch.zeros(rows, 16))
    message = str(info.value)
    assert "test_ops_matmul.py:" in message and all(s in message for s in says)
