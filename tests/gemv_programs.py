"""A matrix-vector kernel shared by the simulator tests (tests/ops/test_ops_matmul.py) and
the CPU-model tests (tests/device/test_device_gemv.py); tests/ is on sys.path through its
conftest.py.  It takes its shapes and dtypes from its arguments: `v` is [1, K], `m` is
[K, N]; it writes gemv, gemv_acc (onto the gemv) and the M = 1 matmul of the same tiles."""

from __future__ import annotations

import torch

import pypto.language as pl


@pl.jit.incore
def gemv_forms(v: pl.Tensor, m: pl.Tensor, once: pl.Out[pl.Tensor], twice: pl.Out[pl.Tensor],
               product: pl.Out[pl.Tensor]):
    a = pl.move(pl.load(v, [0, 0], v.shape, target_memory=pl.Mem.Mat), pl.Mem.Left)
    b = pl.move(pl.load(m, [0, 0], m.shape, target_memory=pl.Mem.Mat), pl.Mem.Right)
    c = pl.tile.gemv(a, b)
    once = pl.store(c, [0, 0], once)
    twice = pl.store(pl.tile.gemv_acc(c, a, b), [0, 0], twice)
    product = pl.store(pl.matmul(a, b), [0, 0], product)
    return once, twice, product


def gemv_arguments(dtype: torch.dtype, k: int, n: int, exact: bool = False) -> list[torch.Tensor]:
    """[1, k] and [k, n] operands of `dtype` and the three [1, n] outputs.  INT8 operands
    span the whole range; float ones are normal samples, or with `exact` multiples of 2^-6
    in [-1, 1], whose products and partial sums FP32 holds exactly (any order of summing
    gives the same bits)."""
    g = torch.Generator().manual_seed(7)
    shapes = ((1, k), (k, n))
    if dtype == torch.int8:
        v, m = (torch.randint(-128, 128, s, generator=g, dtype=torch.int8) for s in shapes)
        out = torch.int32
    elif exact:
        v, m = (torch.randint(-64, 65, s, generator=g).to(dtype) / 64 for s in shapes)
        out = torch.float32
    else:
        v, m = (torch.randn(*s, generator=g).to(dtype) for s in shapes)
        out = torch.float32
    return [v, m, *(torch.zeros(1, n, dtype=out) for _ in range(3))]
