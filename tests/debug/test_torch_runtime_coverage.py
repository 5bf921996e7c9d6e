"""Whole programs (softmax, column sums, padding, matmul) agree with the simulator through
torch_codegen; the per-operator check is test_torch_semantics_per_op.py."""

from __future__ import annotations

import pytest
import torch
from sim_and_torch import sim_and_torch

import pypto.language as pl

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py


@pl.jit
def softmax(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        m = pl.row_max(x)
        e = pl.exp(pl.row_expand_sub(x, m))
        out[:] = pl.row_expand_div(e, pl.row_sum(e))
    return out


@pl.jit
def colsums(x: pl.Tensor[[64, 128], pl.FP16], out: pl.Out[pl.Tensor[[2, 128], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [64, 128])
        tmp = pl.create_tile([64, 128], pl.FP16)
        out[0:1, :] = pl.col_sum(t)
        out[1:2, :] = pl.col_sum(t, tmp)
    return out


@pl.jit
def partial_max(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 64], valid_shape=[16, 48])
        tmp = pl.create_tile([16, 64], pl.FP32)
        out[:] = pl.row_max(pl.fillpad(t, pl.PadValue.min), tmp)
    return out


@pl.jit
def mm(a: pl.Tensor[[64, 128], pl.FP16], b: pl.Tensor[[128, 64], pl.FP16],
       out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.matmul(a, b)
    return out


def _same(kernel, args, platform, exact=True):
    sim_args, torch_args = sim_and_torch(kernel, args, platform, check_shapes=True)
    tol = 0 if exact else 1e-6
    for s, t in zip(sim_args, torch_args, strict=True):
        torch.testing.assert_close(s, t, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_reductions_and_broadcasts_agree_with_the_simulator(platform):
    g = torch.Generator().manual_seed(5)
    _same(softmax, [torch.randn(64, 64, generator=g), torch.zeros(64, 64)], platform,
          exact=False)  # exp: libm and torch may differ in the last bit
    _same(colsums, [torch.randn(64, 128, generator=g).half(), torch.zeros(2, 128).half()],
          platform)
    _same(partial_max, [-torch.rand(16, 64, generator=g) - 1, torch.zeros(16, 1)], platform)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_matmul_agrees_bit_for_bit_with_the_simulator(platform):
    g = torch.Generator().manual_seed(6)
    _same(mm, [torch.randn(64, 128, generator=g).half(), torch.randn(128, 64, generator=g).half(),
               torch.zeros(64, 64)], platform)
