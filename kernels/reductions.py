"""Reductions over partial tiles: row sum and row max along rows, column sum as a tree.

Tile kernels: each walks the tensor in [TR, TN] tiles whose last rows and columns hang over
the tensor's edge (`valid_shape`), so the padding must be neutral for the reduction:
zero for a sum (the load's pad value), -inf for a maximum (`pl.fillpad(t, pl.PadValue.min)`;
a zero there would beat every all-negative row).  FP16 inputs are widened to FP32 before
summing (an FP16 accumulator stops moving once the sum passes 2048 units of its last bit).
"""

import pypto.language as pl
from kernels._tiling import FP32_ULP, NARROW_ROWS, round_up
from pypto import spec
from pypto.golden import portable

TR = 16  # rows per tile of the row reductions; a tile is [TR, N rounded up to 16]


@pl.jit.incore
def row_sum(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    M: pl.constexpr = x.shape[0]
    N: pl.constexpr = x.shape[1]
    TN: pl.constexpr = round_up(N, 16)
    for r in pl.unroll(0, M, TR):
        t = pl.load(x, [r, 0], [TR, TN], valid_shape=[min(TR, M - r), N],
                    pad_value=pl.PadValue.zero)
        tmp = pl.create_tile([TR, TN], pl.FP32)
        s = pl.row_sum(pl.cast(t, pl.FP32) if x.dtype != pl.FP32 else t, tmp)
        out = pl.store(s, [r, 0], out)
    return out


@pl.jit.incore
def row_max(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    M: pl.constexpr = x.shape[0]
    N: pl.constexpr = x.shape[1]
    TN: pl.constexpr = round_up(N, 16)
    for r in pl.unroll(0, M, TR):
        t = pl.load(x, [r, 0], [TR, TN], valid_shape=[min(TR, M - r), N])
        tmp = pl.create_tile([TR, TN], x.dtype)
        m = pl.row_max(pl.fillpad(t, pl.PadValue.min), tmp)
        out = pl.store(m, [r, 0], out)
    return out


@pl.jit.incore
def col_sum(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    # The column sum adds whole columns: one tile holds every row (rounded up to 8).
    TILE: pl.constexpr = [round_up(x.shape[0], 8), round_up(x.shape[1], 16)]
    t = pl.load(x, [0, 0], TILE, valid_shape=x.shape, pad_value=pl.PadValue.zero)
    tmp = pl.create_tile(TILE, pl.FP32)
    out = pl.store(pl.col_sum(t, tmp), [0, 0], out)
    return out


def _rows(dtype, m, n, out_dtype="fp32"):
    return {"x": (dtype, [m, n]), "out": (out_dtype, [m, 1])}


def _quantized(rng, v):
    """Multiples of 2^-8 in [-4, 4): every partial sum of a row of fewer than 2^12 of them is
    a multiple of 2^-8 below 2^14, 22 significant bits, so FP32 adds them exactly in any
    order; FP16 holds each input exactly (11 bits)."""
    return {"x": rng.integers(v.x, -1024, 1024) / 256}


def _half_negative(rng, v):
    """Normal values, every other row shifted below zero: an all-negative row's maximum is
    negative, so a zero in the padding would win."""
    x = rng.normal(v.x)
    x[1::2] = -(x[1::2].abs() + 0.25)
    return {"x": x}


SPECS = [
    spec.Kernel(
        row_sum,
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_32x256": _rows("fp32", 32, 256),
            "f32_21x100": _rows("fp32", 21, 100),
            "f16_16x200": _rows("fp16", 16, 200),
        },
        inputs=_quantized,
        reference=lambda x: portable.sum(x, dim=1, keepdim=True),
        tolerance=spec.Exact(
            "the inputs are multiples of 2^-8 below 4 in magnitude, so every partial sum is "
            "exact in FP32 (22 bits) in any order: the FP32 accumulation (FP16 tiles widened "
            "first) gives the exact row sum, and the zero padding adds nothing"),
    ),
    spec.Kernel(
        row_max,
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_32x256": _rows("fp32", 32, 256),
            "f32_21x100": _rows("fp32", 21, 100),
            "f16_21x90": _rows("fp16", 21, 90, "fp16"),
        },
        inputs=_half_negative,
        reference=lambda x: portable.amax(x, dim=1, keepdim=True),
        tolerance=spec.Exact(
            "a maximum is one of its inputs, bit for bit; the -inf padding never wins"),
    ),
    spec.Kernel(
        col_sum,
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_64x128": {"x": ("fp32", [64, 128]), "out": ("fp32", [1, 128])},
            "f32_50x100": {"x": ("fp32", [50, 100]), "out": ("fp32", [1, 100])},
            "f32_200x48": {"x": ("fp32", [200, 48]), "out": ("fp32", [1, 48])},
        },
        inputs=lambda rng, v: {"x": rng.uniform(v.x, 0.0, 1.0)},
        reference=lambda x: portable.sum(x, dim=0, keepdim=True),
        tolerance=spec.Close(rtol=2 * FP32_ULP, atol=0.0, reason=(
            "the tree rounds each column sum at most d = ceil(log2 rows) times, so with the "
            "reference's rounding, on positive inputs, it is within d + 1 half ulps (7 to 9 "
            "here) a priori; its roundings partly cancel and the seeded worst case is 2.0 half "
            "ulps (both sims): 2 ulps, which the sequential order (4.1 to 6.8 half ulps "
            "here) does not meet")),
    ),
]
