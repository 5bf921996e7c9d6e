"""Accumulation order and precision: FP16 row sums drift with length, FP32 ones do not;
col_sum's tree (tmp_tile) and sequential orders give different last bits."""

from __future__ import annotations

from itertools import pairwise

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

PLATFORMS = ["a2a3sim", "a5sim"]
ROWS = 8
LENGTHS = (256, 512, 1024, 2048, 4096, 8192)


@pl.jit.incore
def prefix_row_sums(x: pl.Tensor[[ROWS, 8192], pl.FP16],
                    s16: pl.Out[pl.Tensor[[ROWS, 6], pl.FP16]],
                    s32: pl.Out[pl.Tensor[[ROWS, 6], pl.FP32]]):
    for i in pl.unroll(6):
        for r in pl.unroll(ROWS):
            t = pl.load(x, [r, 0], [1, LENGTHS[i]])
            s16 = pl.store(pl.row_sum(t, pl.create_tile([1, LENGTHS[i]], pl.FP16)), [r, i], s16)
            w = pl.cast(t, pl.FP32)
            s32 = pl.store(pl.row_sum(w, pl.create_tile([1, LENGTHS[i]], pl.FP32)), [r, i], s32)
    return s16, s32


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fp16_accumulation_error_grows_with_length_fp32_stays_within_1e_5(platform):
    x = torch.rand(ROWS, 8192, generator=torch.Generator().manual_seed(41)).half()
    s16, s32 = torch.empty(ROWS, 6, dtype=torch.float16), torch.empty(ROWS, 6)
    prefix_row_sums(x, s16, s32, config=RunConfig(platform=platform))
    exact = torch.stack([x[:, :n].double().sum(dim=1) for n in LENGTHS], dim=1)
    err16 = (s16.double() - exact).abs().mean(dim=0)
    rel16 = err16 / exact.mean(dim=0)
    rel32 = ((s32.double() - exact).abs() / exact).max()
    assert all(a < b for a, b in pairwise(err16)), err16
    assert rel16[-1] > 100 * rel16[0], rel16  # FP16 stagnates once the sum passes 2048
    assert rel32 < 1e-5, rel32


@pl.jit.incore
def col_sums(x: pl.Tensor[[64, 128], pl.FP32], tree: pl.Out[pl.Tensor[[1, 128], pl.FP32]],
             sequential: pl.Out[pl.Tensor[[1, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [64, 128])
    tree = pl.store(pl.col_sum(t, pl.create_tile([64, 128], pl.FP32)), [0, 0], tree)
    sequential = pl.store(pl.col_sum(t), [0, 0], sequential)
    return tree, sequential


def _spread_input():
    g = torch.Generator().manual_seed(42)
    return torch.randn(64, 128, generator=g) * torch.pow(10.0, torch.rand(64, 128,
                                                                          generator=g) * 6 - 3)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_col_sum_tree_and_sequential_differ_bitwise_both_close_to_float64(platform):
    x = _spread_input()
    tree, sequential = torch.empty(1, 128), torch.empty(1, 128)
    col_sums(x, tree, sequential, config=RunConfig(platform=platform))
    assert not torch.equal(tree, sequential)
    exact = x.double().sum(dim=0, keepdim=True)
    scale = x.double().abs().sum(dim=0, keepdim=True)  # the size of the rounding errors
    for got in (tree, sequential):
        assert ((got.double() - exact).abs() <= 1e-6 * scale).all()
    # Each matches its documented order exactly.
    seq = x[0].clone()
    for r in range(1, 64):
        seq = seq + x[r]
    assert torch.equal(sequential[0], seq)
    rows = list(x)  # the device's pairwise tree (docs/numerics.md)
    while len(rows) > 1:
        pairs = [rows[2 * i] + rows[2 * i + 1] for i in range(len(rows) // 2)]
        if len(rows) % 2:
            pairs[0] = pairs[0] + rows[-1]
        rows = pairs
    assert torch.equal(tree[0], rows[0])


@pl.jit
def tensor_col_sum(x: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[1, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_sum(x)
    return out


def test_tensor_level_col_sum_is_sequential():
    x = _spread_input()
    out, tree, sequential = torch.empty(1, 128), torch.empty(1, 128), torch.empty(1, 128)
    tensor_col_sum(x, out, config=RunConfig(platform="a2a3sim"))
    col_sums(x, tree, sequential, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(out, sequential)
