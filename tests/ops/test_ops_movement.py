"""Movement operators: slices (tile copies, tensor views), reshape, transpose, concat,
move, create_tile, and tile copies by assignment."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.ir import TypeCheckError
from pypto.ir.printer import print_statement
from pypto.runtime import RunConfig

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py

PLATFORMS = ["a2a3sim", "a5sim"]


@pl.jit.incore
def movement(x: pl.Tensor[[16, 32], pl.FP32], y: pl.Tensor[[16, 16], pl.FP32],
             sliced: pl.Out[pl.Tensor[[8, 8], pl.FP32]],
             reshaped: pl.Out[pl.Tensor[[32, 16], pl.FP32]],
             transposed: pl.Out[pl.Tensor[[32, 16], pl.FP32]],
             square: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
             joined: pl.Out[pl.Tensor[[16, 48], pl.FP32]],
             copies: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 32])
    u = pl.load(y, [0, 0], [16, 16])
    for i in pl.range(2):
        sliced = pl.store(t[i * 4:i * 4 + 4, i * 8:i * 8 + 8], [i * 4, 0], sliced)
    reshaped = pl.store(pl.reshape(t, [32, 16]), [0, 0], reshaped)
    transposed = pl.store(pl.transpose(t, 0, 1), [0, 0], transposed)
    u = pl.transpose(u, -1, -2)  # square: in place
    square = pl.store(u, [0, 0], square)
    joined = pl.store(pl.concat(t, u), [0, 0], joined)
    v = t  # a copy: t stays as it was when v changes
    v = pl.add(v, 1.0)
    both = pl.add(pl.move(v, pl.Mem.Vec), t)
    copies = pl.store(both, [0, 0], copies)
    return sliced, reshaped, transposed, square, joined, copies


@pytest.mark.parametrize("platform", PLATFORMS)
def test_movement_operators_match_torch(platform):
    g = torch.Generator().manual_seed(51)
    x, y = torch.randn(16, 32, generator=g), torch.randn(16, 16, generator=g)
    outs = [torch.empty(8, 8), torch.empty(32, 16), torch.empty(32, 16), torch.empty(16, 16),
            torch.empty(16, 48), torch.empty(16, 32)]
    movement(x, y, *outs, config=RunConfig(platform=platform))
    sliced, reshaped, transposed, square, joined, copies = outs
    assert torch.equal(sliced, torch.cat([x[0:4, 0:8], x[4:8, 8:16]]))
    assert torch.equal(reshaped, x.reshape(32, 16))
    assert torch.equal(transposed, x.T)
    assert torch.equal(square, y.T)
    assert torch.equal(joined, torch.cat([x, y.T], dim=1))
    assert torch.equal(copies, (x + 1.0) + x)


@pl.jit
def through_views(x: pl.Tensor[[64, 96], pl.FP32], out: pl.Out[pl.Tensor[[32, 32], pl.FP32]],
                  rows: pl.Out[pl.Tensor[[16, 96], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(x[16:48, 32:64])  # a tensor-level op on a view
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            band = x[i * 32:i * 32 + 32, :]  # a view at a runtime offset
            t = pl.load(band[8:16, :], [0, 0], [8, 96])  # a view of a view
            rows = pl.store(t, [i * 8, 0], rows)
    return out, rows


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensor_slices_are_views_that_loads_read_through(platform):
    x = torch.randn(64, 96, generator=torch.Generator().manual_seed(52))
    out, rows = torch.empty(32, 32), torch.empty(16, 96)
    through_views(x, out, rows, config=RunConfig(platform=platform))
    torch.testing.assert_close(out, torch.exp(x[16:48, 32:64]), rtol=2e-7, atol=0)
    assert torch.equal(rows, torch.cat([x[8:16], x[40:48]]))
    lowered = through_views.lower(x, out, rows, config=RunConfig(platform=platform))
    kernels = [f for f in lowered.functions if f.name != lowered.entry]
    # Folded into the loads' offsets; only the orchestration takes views (task windows).
    assert all("pl.slice(" not in print_statement(s) for f in kernels for s in f.body)


@pl.jit.incore
def slice_too_far(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 32])
    out = pl.store(t[12:20, 0:8], [0, 0], out)
    return out


def test_a_static_slice_outside_the_tile_is_a_type_error_naming_the_line():
    with pytest.raises(TypeCheckError) as info:
        slice_too_far.lower(torch.zeros(16, 32), torch.zeros(8, 8))
    assert "test_ops_movement.py:" in str(info.value) and "[16, 32]" in str(info.value)


@pl.jit.incore
def int_tiles(x: pl.Tensor[[4, 64], pl.INT16], out: pl.Out[pl.Tensor[[4, 64], pl.INT16]]):
    t = pl.load(x, [0, 0], [4, 64])
    scratch = pl.create_tile([4, 64], pl.INT16)
    out = pl.store(pl.sub(pl.expands(scratch, 7), t), [0, 0], out)
    return out


def test_create_tile_and_expands_on_integers():
    x = torch.arange(256, dtype=torch.int16).reshape(4, 64)
    out = torch.empty(4, 64, dtype=torch.int16)
    int_tiles(x, out, config=RunConfig(platform="a5sim"))
    assert torch.equal(out, 7 - x)


@pl.jit
def tiles_into_windows(x: pl.Tensor[[32, 64], pl.FP32], out: pl.InOut[pl.Tensor[[32, 64],
                                                                                pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            t = pl.load(x, [i * 16, 0], [16, 32])
            out[i * 16:i * 16 + 16, 32:64] = pl.neg(t)
    return out


def test_writing_a_tile_into_a_window_of_an_output():
    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(53))
    out = torch.zeros(32, 64)
    tiles_into_windows(x, out, config=RunConfig(platform="a2a3sim"))
    want = torch.zeros(32, 64)
    want[:, 32:] = -x[:, :32]
    assert torch.equal(out, want)
