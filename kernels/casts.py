"""Conversions: INT32 → FP16 across the FP16 range boundary, FP32 → BF16 with specials,
FP16 → INT8 with ties and saturation.

The INT32 → FP16 cases come from the precision page (docs/precision-workflow.zh.md): on A5
the cast runs as INT32 → FP32 → FP16, and the answer is bit-exact against a one-step
reference because every |x| < 2^24 is exact in FP32; FP16 overflows from 65520 on, not
from 65504.
"""

import math

import pypto.language as pl
from kernels._tiling import NARROW_ROWS
from pypto import spec
from pypto.golden import portable


@pl.jit
def int32_to_fp16(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.FP16)
    return out


@pl.jit
def fp32_to_bf16(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.BF16)
    return out


@pl.jit
def fp16_to_int8(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.INT8)
    return out


# The precision page's boundary table: exact in FP16; rounding down to 65504 below the
# midpoint 65520; overflowing to infinity from 65520 on; both signs; and past 2^24, where
# the FP32 hop rounds but the result overflows anyway.
FP16_BOUNDARY = [
    0, 1, 2048, 2049, 4097, 65504, 65505, 65519, 65520, 65521, 70000,
    (1 << 24) - 1, 1 << 24, (1 << 24) + 1, (1 << 31) - 1,
]
FP16_BOUNDARY += [-v for v in FP16_BOUNDARY if v] + [-(1 << 31)]


def int32_inputs(rng, v):
    """The boundary table first, then integers spread over ±2^17 (past the FP16 range)."""
    x = rng.integers(v.x, -(1 << 17), 1 << 17)
    x.view(-1)[: len(FP16_BOUNDARY)] = x.new_tensor(FP16_BOUNDARY)
    return {"x": x}


BF16_SPECIALS = [
    0.0, -0.0, float("inf"), float("-inf"), float("nan"),
    3.4028234663852886e38,  # FP32 max: rounds up to BF16 infinity
    1.1754943508222875e-38,  # smallest normal FP32
    1.401298464324817e-45,  # smallest subnormal FP32
    1.0 + 2.0**-8,  # a tie: rounds to even (1.0)
    1.0 + 3 * 2.0**-8,  # a tie: rounds to even (1.0 + 2^-6)
]


SCALES = [math.ldexp(1.0, e) for e in range(-60, 60)]  # 2^-60 .. 2^59


def fp32_inputs(rng, v):
    """Normal values of every magnitude, with the special values in the first row."""
    x = rng.normal(v.x) * rng.choice(v.x, SCALES)
    x.view(-1)[: len(BF16_SPECIALS)] = x.new_tensor(BF16_SPECIALS)
    return {"x": x}


# FP16 → INT8 rounds to nearest, ties to even (`rint`), then saturates to [-128, 127]; NaN
# gives 0 and ±inf saturate (docs/numerics.md).  Ties on both sides of zero, the last values
# that round into range and the first that saturate.
INT8_BOUNDARY = [
    0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 126.5, 127.0, 127.25, 127.5, 128.0,
    -127.5, -128.0, -128.25, -128.5, -129.0, 65504.0, -65504.0, float("inf"), float("-inf"),
    float("nan"), 5.960464477539063e-08, -5.960464477539063e-08,
]


def fp16_inputs(rng, v):
    """The boundary table first, then halves and quarters over ±160 (past INT8's range)."""
    x = rng.integers(v.x, -640, 640) / 4
    x.view(-1)[: len(INT8_BOUNDARY)] = x.new_tensor(INT8_BOUNDARY)
    return {"x": x}


def int8_reference(x):
    """Round half to even (torch.round), saturate, NaN to 0: what `rint` then INT8 means."""
    import torch

    return portable.clamp(torch.nan_to_num(x.double().round(), nan=0.0), -128, 127)


SPECS = [
    spec.Kernel(
        int32_to_fp16,
        accepted_hints=NARROW_ROWS,
        variants={
            "i32_64x128": {"x": ("int32", [64, 128]), "out": ("fp16", [64, 128])},
            "i32_9x50": {"x": ("int32", [9, 50]), "out": ("fp16", [9, 50])},
        },
        inputs=int32_inputs,
        reference=lambda x: x.double(),
        tolerance=spec.Exact(
            "one round-to-nearest-even to FP16 on every backend: A5's INT32→FP32 hop is "
            "exact below 2^24 and values above it overflow either way"
        ),
    ),
    spec.Kernel(
        fp32_to_bf16,
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_64x128": {"x": ("fp32", [64, 128]), "out": ("bf16", [64, 128])},
            "f32_3x257": {"x": ("fp32", [3, 257]), "out": ("bf16", [3, 257])},
        },
        inputs=fp32_inputs,
        reference=lambda x: x.double(),
        tolerance=spec.Exact(
            "one round-to-nearest-even from FP32 to BF16, the same rounding as the "
            "reference's final cast; NaN stays NaN"
        ),
    ),
    spec.Kernel(
        fp16_to_int8,
        accepted_hints=NARROW_ROWS,
        variants={
            "f16_64x128": {"x": ("fp16", [64, 128]), "out": ("int8", [64, 128])},
            "f16_5x77": {"x": ("fp16", [5, 77]), "out": ("int8", [5, 77])},
        },
        inputs=fp16_inputs,
        reference=int8_reference,
        tolerance=spec.Exact(
            "an integer result: FP16 → INT8 rounds half to even and saturates, which the "
            "reference computes exactly (NaN → 0, ±inf → the range's ends)"
        ),
    ),
]
