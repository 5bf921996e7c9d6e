"""Elementwise arithmetic: add, scaled sum `(a + b) * s`, exp.

Each variant includes one odd shape whose rows and columns are not tile multiples.
"""

import pypto.language as pl
from pypto import spec


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def scaled_sum(a: pl.Tensor, b: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.add(a, b), s)
    return out


@pl.jit
def exp(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(x)
    return out


def _same(dtype, shape, *names):
    """Every named parameter declared as one tensor type."""
    return {name: (dtype, shape) for name in names}


# One round-to-nearest in the output dtype errs by at most half an ulp: 2^-24 relative in
# FP32, 2^-11 in FP16.  The tolerances below count such roundings.
FP32_ROUNDING = 2.0**-24
FP16_ROUNDING = 2.0**-11

# exp is not specified to be correctly rounded on the device; the simulator's libm expf is
# within an ulp.  In FP16 that error is swamped by FP16's own rounding.
EXP_FP32 = spec.Close(rtol=4 * FP32_ROUNDING, atol=0.0,
                      reason="expf within 1 ulp of FP32 plus the final rounding: 2 ulps")
EXP_FP16 = spec.Close(rtol=2 * FP16_ROUNDING, atol=0.0,
                      reason="computed in FP32 and rounded once to FP16: 1 FP16 ulp covers it")

SPECS = [
    spec.Kernel(
        add,
        variants={
            "f32_128x128": _same("fp32", [128, 128], "a", "b", "out"),
            "f32_33x100": _same("fp32", [33, 100], "a", "b", "out"),
            "f16_64x256": _same("fp16", [64, 256], "a", "b", "out"),
        },
        inputs=lambda rng, v: {"a": rng.normal(v.a), "b": rng.normal(v.b)},
        reference=lambda a, b: a.double() + b.double(),
        tolerance=spec.Exact(
            "the sum of two FP32 (or FP16) values is exact in FP64, so the kernel's one "
            "rounding to the output dtype equals the reference's final cast"
        ),
    ),
    spec.Kernel(
        scaled_sum,
        variants={
            "f32_128x128": {**_same("fp32", [128, 128], "a", "b", "out"),
                            "s": spec.scalar("fp32")},
            "f32_7x129": {**_same("fp32", [7, 129], "a", "b", "out"), "s": spec.scalar("fp32")},
        },
        inputs=lambda rng, v: {
            "a": rng.normal(v.a), "b": rng.normal(v.b), "s": rng.uniform(v.s, 0.5, 4.0)},
        reference=lambda a, b, s: (a.double() + b.double()) * s,
        tolerance=spec.Close(
            rtol=4 * FP32_ROUNDING, atol=0.0,
            reason="the kernel rounds twice in FP32 (after the add and after the mul), the "
            "reference once: at most 3 roundings of 2^-24 apart, relative",
        ),
    ),
    spec.Kernel(
        exp,
        variants={
            "f32_128x128": _same("fp32", [128, 128], "x", "out"),
            "f32_1x7": _same("fp32", [1, 7], "x", "out"),
            "f16_40x130": _same("fp16", [40, 130], "x", "out"),
        },
        inputs=lambda rng, v: {"x": rng.uniform(v.x, -8.0, 8.0)},
        reference=lambda x: x.double().exp(),
        tolerance=lambda v: EXP_FP16 if v.x.dtype == pl.FP16 else EXP_FP32,
    ),
]
