"""Kernels of batched matmuls (pl.batch_matmul on [B, M, K] tiles, pl.matmul of [B, M, K]
tensors in pl.at) and of [B, rows, cols] tiles, for the simulator tests
(tests/ops/test_ops_batch_matmul.py) and the CPU-model ones
(tests/device/test_device_batch_matmul.py)."""

from __future__ import annotations

import torch

import pypto.language as pl


@pl.jit.incore
def tile_batch_matmul(a: pl.Tensor[[2, 16, 32], pl.FP16], b: pl.Tensor[[2, 32, 48], pl.FP16],
                      c: pl.Out[pl.Tensor[[2, 16, 48], pl.FP32]]):
    a_mat = pl.load(a, [0, 0, 0], [2, 16, 32], target_memory=pl.Mem.Mat)
    b_mat = pl.load(b, [0, 0, 0], [2, 32, 48], target_memory=pl.Mem.Mat)
    acc = pl.batch_matmul(pl.move(a_mat, pl.Mem.Left), pl.move(b_mat, pl.Mem.Right))
    c = pl.store(acc, [0, 0, 0], c)
    return c


@pl.jit.incore
def tile_broadcasts(a1: pl.Tensor[[1, 16, 32], pl.BF16], b3: pl.Tensor[[3, 32, 16], pl.BF16],
                    w: pl.Tensor[[16, 32], pl.BF16],
                    c1: pl.Out[pl.Tensor[[3, 16, 16], pl.FP32]],
                    c2: pl.Out[pl.Tensor[[2, 32, 32], pl.FP32]]):
    """A batch of 1 (a1) and a [K, N] tile (w) stand for every batch of the other operand;
    b3's batches 1 and 2 are loaded from offset [1, 0, 0] as a [2, 32, 16] Left tile."""
    a_left = pl.move(pl.load(a1, [0, 0, 0], [1, 16, 32], target_memory=pl.Mem.Mat), pl.Mem.Left)
    b_right = pl.move(pl.load(b3, [0, 0, 0], [3, 32, 16], target_memory=pl.Mem.Mat),
                      pl.Mem.Right)
    c1 = pl.store(pl.batch_matmul(a_left, b_right), [0, 0, 0], c1)
    b_left = pl.tile.move(pl.load(b3, [1, 0, 0], [2, 32, 16], target_memory=pl.Mem.Mat),
                          pl.Mem.Left)
    w_right = pl.move(pl.load(w, [0, 0], [16, 32], target_memory=pl.Mem.Mat), pl.Mem.Right)
    c2 = pl.store(pl.tile.batch_matmul(b_left, w_right), [0, 0, 0], c2)
    return c1, c2


@pl.jit.incore
def batch_elementwise(x: pl.Tensor[[2, 16, 32], pl.FP32], y: pl.Tensor[[2, 16, 32], pl.FP32],
                      out: pl.Out[pl.Tensor[[2, 16, 32], pl.FP32]],
                      one: pl.Out[pl.Tensor[[1, 16, 32], pl.FP32]]):
    """[B, rows, cols] Vec tiles: the operators work batch by batch; a [1, 16, 32] tile
    is one batch."""
    t = pl.load(x, [0, 0, 0], [2, 16, 32])
    u = pl.load(y, [0, 0, 0], [2, 16, 32])
    s = pl.mul(pl.add(t, u), 0.5)
    out = pl.store(pl.maximum(s, t), [0, 0, 0], out)
    v = pl.load(x, [1, 0, 0], [1, 16, 32])
    one = pl.store(pl.exp(v), [0, 0, 0], one)
    return out, one


@pl.jit
def tensor_batch_matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b)
    return c


@pl.jit
def tensor_batch_matmul_fp16(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b, out_dtype=pl.FP16)
    return c


@pl.jit
def tensor_batch_matmul_transposed(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b, a_trans=True, b_trans=True)
    return c


def k_order(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b batch by batch (broadcast as torch.matmul does), each sum formed in K order:
    FP32 products and adds for floats (the documented matmul numerics), INT32 for INT8."""
    if not a.is_floating_point():
        return torch.matmul(a.long(), b.long()).int()
    out = torch.zeros(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
                      + (a.shape[-2], b.shape[-1]))
    for k in range(a.shape[-1]):
        out = out + a[..., :, k:k + 1].float() * b[..., k:k + 1, :].float()
    return out


def quantized(*shape, seed: int = 0, dtype=torch.float16) -> torch.Tensor:
    """Multiples of 2^-6 in [-1, 1]: every product and partial sum of a short K is exact
    in FP32, so any summation order gives the same bits."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(-64, 65, shape, generator=g).double() / 64).to(dtype)


def int8(*shape, seed: int = 0) -> torch.Tensor:
    return torch.randint(-128, 128, shape, generator=torch.Generator().manual_seed(seed),
                         dtype=torch.int8)
