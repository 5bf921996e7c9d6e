"""Split-K programs shared by tests (tests/ is on sys.path through its conftest.py): `c` is
declared `pl.Out`, zeroed by one task and accumulated into by SPLITS atomic-add tasks, so
the compiler widens it to InOut; `split_k_unzeroed` forgets the zeroing task.  The kernels
take their shapes from their arguments, each split a K // SPLITS slice of `a` and `b`;
M, K, N are the small shapes most callers pass."""

from __future__ import annotations

import pypto.language as pl

# Four partial sums: with two, 0 + x + y and 0 + y + x round alike, so no order shows.
M, K, N, SPLITS = 16, 64, 16, 4


@pl.jit.incore
def zero_c(c: pl.Out[pl.Tensor]):
    c = pl.store(pl.full(c.shape, pl.FP32, 0.0), [0, 0], c)
    return c


@pl.jit.incore
def add_part(a: pl.Tensor, b: pl.Tensor, c: pl.InOut[pl.Tensor], k0: pl.Scalar[pl.INT64]):
    kc: pl.constexpr = a.shape[1] // SPLITS
    ta = pl.load(a, [0, k0], [a.shape[0], kc], target_memory=pl.Mem.Mat)
    tb = pl.load(b, [k0, 0], [kc, b.shape[1]], target_memory=pl.Mem.Mat)
    acc = pl.matmul(pl.move(ta, pl.Mem.Left), pl.move(tb, pl.Mem.Right))
    c = pl.store(acc, [0, 0], c, atomic=pl.AtomicType.Add)
    return c


@pl.jit
def split_k(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    c = zero_c(c)
    kc: pl.constexpr = a.shape[1] // SPLITS
    for s in pl.parallel(SPLITS):  # one task per split: they accumulate in any order
        c = add_part(a, b, c, s * kc)
    return c


@pl.jit
def split_k_unzeroed(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    # Reads its output before anything wrote it: garbage on a device, poison here.
    kc: pl.constexpr = a.shape[1] // SPLITS
    for s in pl.parallel(SPLITS):
        c = add_part(a, b, c, s * kc)
    return c
