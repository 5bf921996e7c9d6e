"""Programs that exercise every construct the compiler supports; used by pipeline tests."""

from __future__ import annotations

import torch

import pypto.language as pl

N = 128


@pl.jit
def tensor_add(a: pl.Tensor[[N, N], pl.FP32], b: pl.Tensor[[N, N], pl.FP32],
               out: pl.Out[pl.Tensor[[N, N], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def fused_scalar(a: pl.Tensor[[64, 128], pl.FP16], b: pl.Tensor[[64, 128], pl.FP16],
                 out: pl.Out[pl.Tensor[[64, 128], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(pl.sub(2.0, pl.mul(pl.add(a, b), 0.5)))
    return out


@pl.jit
def cast_chain(x: pl.Tensor[[16, 128], pl.INT32], out: pl.Out[pl.Tensor[[16, 128], pl.BF16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.BF16, mode="round")
    return out


@pl.jit
def big_add(a: pl.Tensor[[1024, 256], pl.FP32], b: pl.Tensor[[1024, 256], pl.FP32],
            out: pl.Out[pl.Tensor[[1024, 256], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.div(a, b)
    return out


@pl.jit.incore
def tile_walk(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.range(4):
        ta = pl.load(a, [i * 32, 0], [32, 128])
        tb = pl.load(b, [i * 32, 0], [32, 128])
        acc = pl.add(ta, tb)
        acc = pl.mul(acc, ta)
        out = pl.store(acc, [i * 32, 0], out)
    return out


@pl.jit
def tile_walk_entry(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = tile_walk(a, b, out)
    return out


@pl.jit
def two_stages(x: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        scratch = pl.exp(x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale"):
        out[:] = pl.mul(scratch, 3.0)
    return out


@pl.jit
def task_per_row_block(a: pl.Tensor[[128, 128], pl.FP32], out: pl.Out[pl.Tensor[[128, 128],
                                                                                pl.FP32]]):
    for r in pl.range(0, 128, 32):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [r, 0], [32, 128])
            out = pl.store(pl.add(t, t), [r, 0], out)
    return out


@pl.jit.incore
def unrolled(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    for k in pl.unroll(2):
        t = pl.load(a, [k * 32, 0], [32, 128])
        out = pl.store(pl.mul(t, t), [k * 32, 0], out)
    return out


def _f(*shape, dtype=torch.float32):
    return torch.ones(*shape, dtype=dtype)


CORPUS = {
    "tensor_add": (tensor_add, lambda: (_f(N, N), _f(N, N), _f(N, N))),
    "fused_scalar": (fused_scalar, lambda: tuple(_f(64, 128, dtype=torch.float16)
                                                 for _ in range(3))),
    "cast_chain": (cast_chain, lambda: (torch.ones(16, 128, dtype=torch.int32),
                                        _f(16, 128, dtype=torch.bfloat16))),
    "big_add": (big_add, lambda: (_f(1024, 256), _f(1024, 256), _f(1024, 256))),
    "tile_walk_entry": (tile_walk_entry, lambda: (_f(128, 128), _f(128, 128), _f(128, 128))),
    "two_stages": (two_stages, lambda: (_f(32, 128), _f(32, 128))),
    "task_per_row_block": (task_per_row_block, lambda: (_f(128, 128), _f(128, 128))),
    "unrolled": (unrolled, lambda: (_f(64, 128), _f(64, 128))),
}
