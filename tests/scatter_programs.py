"""Scatter kernels and torch's meaning of them, shared by the simulator tests
(tests/ops/test_ops_scatter.py) and the CPU-model tests (tests/device/test_device_scatter.py);
tests/ is on sys.path through its conftest.py."""

from __future__ import annotations

import torch

import pypto.language as pl

R, C, K = 4, 32, 16  # scatter_in_tile: dst [R, C]; src, indexes [2, K], valid [2, 12]


@pl.jit.incore
def scatter_in_tile(d: pl.Tensor, s: pl.Tensor, i: pl.Tensor, out: pl.Out[pl.Tensor]):
    """pl.tile.scatter of s's [2, K] tile into d's [R, C] by i's, valid over [2, 12]."""
    t = pl.load(d, [0, 0], [R, C])
    at = pl.load(i, [0, 0], [2, K], valid_shape=[2, 12])
    t = pl.tile.scatter(t, pl.load(s, [0, 0], [2, K]), at)
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def scatter_rows(t: pl.InOut[pl.Tensor], index: pl.Tensor, src: pl.Tensor):
    """pl.scatter(t, -1, index, src) in a pl.at block."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.scatter(t, -1, index, src)
    return t


def scattered(dst: torch.Tensor, at: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    """The tile form's meaning: dst.flatten()[at[k]] = src[k] in order of k."""
    want = dst.clone().reshape(-1)
    for k, v in zip(at.reshape(-1).tolist(), src.reshape(-1), strict=True):
        want[k] = v
    return want.reshape(dst.shape)


def row_scattered(t: torch.Tensor, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    """The tensor form's meaning: t[b, index[b, k]] = src[b, k] in order of k."""
    want = t.clone()
    for b in range(t.shape[0]):
        for k in range(index.shape[1]):
            want[b, int(index[b, k])] = src[b, k]
    return want


@pl.jit
def scatter_update_rows(cache: pl.InOut[pl.Tensor], index: pl.Tensor, src: pl.Tensor):
    """pl.scatter_update(cache, -2, index, src) in a pl.at block (either form: [rows, d] or
    upstream's KV cache [blockNum, blockSize, 1, d])."""
    with pl.at(level=pl.Level.CORE_GROUP):
        cache = pl.scatter_update(cache, -2, index, src)
    return cache
