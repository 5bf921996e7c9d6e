"""A kernel with the cube's bias forms, shared by the simulator tests
(tests/ops/test_ops_matmul_bias.py) and the CPU-model tests
(tests/device/test_device_matmul_bias.py); tests/ is on sys.path through its conftest.py.
It takes its shapes and dtypes from its arguments: `a` is [M, K], `b` is [K, N], `bias` is
[1, N] of the product's dtype, `v` is [1, K]; it writes pl.tile.matmul_bias(a, b, bias),
pl.tile.gemv_bias(v, b, bias) and the plain product a @ b."""

from __future__ import annotations

import torch

import pypto.language as pl


@pl.jit.incore
def bias_forms(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, v: pl.Tensor,
               with_bias: pl.Out[pl.Tensor], gemv: pl.Out[pl.Tensor],
               product: pl.Out[pl.Tensor]):
    x = pl.move(pl.load(a, [0, 0], a.shape, target_memory=pl.Mem.Mat), pl.Mem.Left)
    y = pl.move(pl.load(b, [0, 0], b.shape, target_memory=pl.Mem.Mat), pl.Mem.Right)
    row = pl.move(pl.load(bias, [0, 0], bias.shape, target_memory=pl.Mem.Mat), pl.Mem.Bias)
    u = pl.move(pl.load(v, [0, 0], v.shape, target_memory=pl.Mem.Mat), pl.Mem.Left)
    with_bias = pl.store(pl.tile.matmul_bias(x, y, row), [0, 0], with_bias)
    gemv = pl.store(pl.tile.gemv_bias(u, y, row), [0, 0], gemv)
    product = pl.store(pl.matmul(x, y), [0, 0], product)
    return with_bias, gemv, product


def product_dtype(dtype: torch.dtype) -> torch.dtype:
    """The accumulator's dtype of a `dtype` product: INT32 for INT8, else FP32."""
    return torch.int32 if dtype == torch.int8 else torch.float32


def bias_arguments(dtype: torch.dtype, m: int, k: int, n: int, seed: int = 11,
                   exact: bool = False) -> list[torch.Tensor]:
    """Random [m, k], [k, n] operands of `dtype`, a [1, n] bias and a [1, k] vector, and the
    three outputs ([m, n], [1, n], [m, n]).  INT8 spans its whole range and the INT32 bias
    reaches past 2**31 - 1 when added (the sum wraps).  `exact`: float operands are small
    integers, so every K sum is exact in any order (pto-isa's CPU model sums with fma) and
    only the bias add rounds."""
    g = torch.Generator().manual_seed(seed)
    out = product_dtype(dtype)
    if dtype == torch.int8:
        a, b, v = (torch.randint(-128, 128, s, generator=g, dtype=torch.int8)
                   for s in ((m, k), (k, n), (1, k)))
        bias = torch.randint(-2**31, 2**31, (1, n), generator=g, dtype=torch.int64).int()
    elif exact:
        a, b, v = (torch.randint(-8, 9, s, generator=g).to(dtype)
                   for s in ((m, k), (k, n), (1, k)))
        bias = torch.randn(1, n, generator=g)
    else:
        a, b, v = (torch.randn(*s, generator=g).to(dtype) for s in ((m, k), (k, n), (1, k)))
        bias = torch.randn(1, n, generator=g)
    outputs = [torch.zeros(m, n, dtype=out), torch.zeros(1, n, dtype=out),
               torch.zeros(m, n, dtype=out)]
    return [a, b, bias, v, *outputs]
