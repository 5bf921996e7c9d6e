"""Partial tiles: loads pad, padding takes part in reductions, valid regions reach stores."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py

PLATFORMS = ["a2a3sim", "a5sim"]


@pl.jit.incore
def partial_row_max(x: pl.Tensor[[16, 48], pl.FP32], plain: pl.Out[pl.Tensor[[16, 1], pl.FP32]],
                    padded: pl.Out[pl.Tensor[[16, 1], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 64], valid_shape=[16, 48])
    tmp = pl.create_tile([16, 64], pl.FP32)
    plain = pl.store(pl.row_max(t, tmp), [0, 0], plain)
    padded = pl.store(pl.row_max(pl.fillpad(t, pl.PadValue.min), tmp), [0, 0], padded)
    return plain, padded


def _negative(rows, cols, seed):
    return -torch.rand(rows, cols, generator=torch.Generator().manual_seed(seed)) - 1.0


@pytest.mark.parametrize("platform", PLATFORMS)
def test_row_max_of_negative_partial_tile_sees_the_zero_padding(platform):
    x = _negative(16, 48, 21)
    plain, padded = torch.empty(16, 1), torch.empty(16, 1)
    partial_row_max(x, plain, padded, config=RunConfig(platform=platform))
    assert torch.equal(plain, torch.zeros(16, 1))  # the padding (0.0) won every row
    assert torch.equal(padded, x.amax(dim=1, keepdim=True))


@pl.jit.incore
def partial_softmax(x: pl.Tensor[[10, 48], pl.FP32], fixed: pl.Out[pl.Tensor[[10, 48], pl.FP32]],
                    naive: pl.Out[pl.Tensor[[10, 48], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 64], valid_shape=[10, 48])
    tmp = pl.create_tile([16, 64], pl.FP32)
    for k in pl.unroll(2):
        src = pl.fillpad(t, pl.PadValue.min) if k == 0 else t
        e = pl.row_expand_expdif(src, pl.row_max(src, tmp))
        y = pl.row_expand_div(e, pl.row_sum(e, tmp))
        if k == 0:
            fixed = pl.store(y, [0, 0], fixed)
        else:
            naive = pl.store(y, [0, 0], naive)
    return fixed, naive


@pytest.mark.parametrize("platform", PLATFORMS)
def test_partial_tile_softmax_needs_fillpad_and_stores_only_the_valid_region(platform):
    x = torch.randn(10, 48, generator=torch.Generator().manual_seed(22))
    fixed, naive = torch.empty(10, 48), torch.empty(10, 48)
    partial_softmax(x, fixed, naive, config=RunConfig(platform=platform))
    torch.testing.assert_close(fixed, torch.softmax(x, dim=-1), rtol=1e-5, atol=1e-5)
    # Without fillpad the 16 padding columns add exp(0 - max) each to every row sum.
    assert (naive.sum(dim=1) < 0.999).all()


@pl.jit.incore
def valid_region_moves(x: pl.Tensor[[8, 40], pl.FP32], out: pl.Out[pl.Tensor[[8, 40], pl.FP32]],
                       corner: pl.Out[pl.Tensor[[4, 8], pl.FP32]]):
    t = pl.load(x, [0, 0], [8, 64], valid_shape=[8, 40], pad_value=pl.PadValue.max)
    doubled = pl.mul(t, 2.0)  # padding computed too, valid region unchanged
    out = pl.store(doubled, [0, 0], out)
    window = doubled[4:8, 32:48]  # valid region cut to the window: [4, 8]
    corner = pl.store(window, [0, 0], corner)
    return out, corner


@pytest.mark.parametrize("platform", PLATFORMS)
def test_valid_region_flows_through_ops_and_slices_into_stores(platform):
    x = torch.randn(8, 40, generator=torch.Generator().manual_seed(23))
    out, corner = torch.full((8, 40), 7.0), torch.full((4, 8), 7.0)
    valid_region_moves(x, out, corner, config=RunConfig(platform=platform))
    assert torch.equal(out, x * 2)
    assert torch.equal(corner, x[4:8, 32:40] * 2)


def test_valid_region_is_part_of_the_tile_type_and_prints():
    x, out, corner = torch.zeros(8, 40), torch.zeros(8, 40), torch.zeros(4, 8)
    text = valid_region_moves.lower(x, out, corner).as_python()
    assert "pl.Tile[[8, 64], pl.FP32, [8, 40], pl.Mem.Vec" in text
    assert "pl.Tile[[4, 16], pl.FP32, [4, 8], pl.Mem.Vec" in text
    assert pl.parse(text) == valid_region_moves.lower(x, out, corner)


@pl.jit.incore
def set_valid(x: pl.Tensor[[8, 64], pl.INT32], out: pl.InOut[pl.Tensor[[8, 64], pl.INT32]]):
    t = pl.load(x, [0, 0], [8, 64])
    narrow = pl.set_validshape(t, 3, 5)
    out = pl.store(pl.add(narrow, 1), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_set_validshape_limits_what_a_store_writes(platform):
    x = torch.arange(8 * 64, dtype=torch.int32).reshape(8, 64)
    out = torch.full((8, 64), -1, dtype=torch.int32)
    set_valid(x, out, config=RunConfig(platform=platform))
    want = torch.full((8, 64), -1, dtype=torch.int32)
    want[:3, :5] = x[:3, :5] + 1
    assert torch.equal(out, want)
