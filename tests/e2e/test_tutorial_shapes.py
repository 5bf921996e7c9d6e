"""The tutorial's shapes: tensor-level, explicit tile and tiled-loop additions equal torch."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

PLATFORMS = ["a2a3sim", "a5sim"]


@pl.jit
def tensor_add(a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
               out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit.incore
def tile_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    ta = pl.load(a, [0, 0], [128, 128])
    tb = pl.load(b, [0, 0], [128, 128])
    out = pl.store(pl.add(ta, tb), [0, 0], out)
    return out


@pl.jit
def tile_add_entry(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = tile_add(a, b, out)
    return out


TILE = 128


@pl.jit.incore
def walk_add(a: pl.Tensor[[512, 128], pl.FP32], b: pl.Tensor[[512, 128], pl.FP32],
             out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]):
    for i in pl.range(4):
        ta = pl.load(a, [i * TILE, 0], [TILE, TILE])
        tb = pl.load(b, [i * TILE, 0], [TILE, TILE])
        out = pl.store(pl.add(ta, tb), [i * TILE, 0], out)
    return out


@pl.jit
def walk_add_tasks(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    for r in pl.range(0, 512, TILE):
        with pl.at(level=pl.Level.CORE_GROUP):
            ta = pl.load(a, [r, 0], [TILE, TILE])
            tb = pl.load(b, [r, 0], [TILE, TILE])
            out = pl.store(pl.add(ta, tb), [r, 0], out)
    return out


def _inputs(rows: int, cols: int = 128, dtype=torch.float32):
    g = torch.Generator().manual_seed(rows)
    a = torch.randn(rows, cols, generator=g).to(dtype)
    b = torch.randn(rows, cols, generator=g).to(dtype)
    return a, b, torch.zeros(rows, cols, dtype=dtype)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensor_level_add(platform):
    a, b, out = _inputs(128)
    result = tensor_add(a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out, a + b)
    assert result is out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_explicit_load_add_store(platform):
    a, b, out = _inputs(128)
    tile_add_entry(a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out, a + b)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tile_kernel_called_directly(platform):
    a, b, out = _inputs(128)
    tile_add(a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out, a + b)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_512_rows_walked_in_128_tiles_inside_one_kernel(platform):
    a, b, out = _inputs(512)
    walk_add(a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out, a + b)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_512_rows_walked_as_one_task_per_tile(platform):
    a, b, out = _inputs(512)
    walk_add_tasks(a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out, a + b)


def test_tiled_loop_stays_a_loop_in_the_ir():
    a, b, out = _inputs(512)
    text = walk_add.lower(a, b, out).as_python()
    assert "for i in pl.range(0, 4, 1):" in text
    assert text.count("pl.load(") == 2
