"""Elementwise arithmetic: add, scaled sum `(a + b) * s`, exp, mul-add `a * b + c`, scale `x * s`.

Tensor-level kernels (`pl.at`): the compiler cuts the tensors into tiles of the variant's
shape, so every kernel has one odd shape whose rows and columns are not tile multiples.
Tolerances count roundings: one round-to-nearest in the output dtype errs by at most half
an ulp, 2^-24 relative in FP32 and 2^-11 in FP16 (docs/kernels.md has the table).
"""

import pypto.language as pl
from kernels._tiling import NARROW_ROWS
from pypto import spec
from pypto.golden import portable


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


@pl.jit
def mul_add(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(pl.mul(a, b), c)
    return out


@pl.jit
def scale(x: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(x, s)
    return out


def _same(dtype, shape, *names):
    """Every named parameter declared as one tensor type."""
    return {name: (dtype, shape) for name in names}


# One round-to-nearest in the output dtype errs by at most half an ulp: 2^-24 relative in
# FP32, 2^-11 in FP16.  The tolerances below count such roundings.
FP32_ROUNDING = 2.0**-24
FP16_ROUNDING = 2.0**-11

# exp is not specified to be correctly rounded on the device; the simulator's expf (fmath.hpp)
# is the float64 exp the reference uses, rounded once.  In FP16 that error is swamped by
# FP16's own rounding.
EXP_FP32 = spec.Close(rtol=4 * FP32_ROUNDING, atol=0.0,
                      reason="expf within 1 ulp of FP32 plus the final rounding: 2 ulps (the "
                      "simulator's expf is the reference's float64 exp rounded once: equal)")
EXP_FP16 = spec.Close(rtol=2 * FP16_ROUNDING, atol=0.0,
                      reason="computed in FP32 and rounded once to FP16: 1 FP16 ulp covers it")

# a * b + c rounds the product and then the sum (two instructions: no fused multiply-add).
# With |a|, |b| < 2 the product's rounding is at most half an ulp of [2, 4): an absolute
# 2^-23 in FP32, 2^-10 in FP16 -- absolute, since the sum may cancel to near zero.  The sum's
# rounding and the reference's own are half an ulp of the result each: rtol of 2 roundings.
MUL_ADD_FP32 = spec.Close(
    rtol=2 * FP32_ROUNDING, atol=2.0**-23,
    reason="the product rounds (|a*b| < 4: at most 2^-23 absolute) and the sum rounds, where "
    "the reference rounds once: atol = the product's half ulp, rtol = 2 half ulps of the result")
MUL_ADD_FP16 = spec.Close(
    rtol=2 * FP16_ROUNDING, atol=2.0**-10,
    reason="FP16 rounds after the mul and after the add (|a*b| < 4: the product's rounding is "
    "at most 2^-10 absolute), the reference once: atol = that, rtol = 2 FP16 half ulps")


def _scale_inputs(rng, v):
    """A scale the tile's dtype holds exactly: a scalar operand is rounded to the tile's dtype
    first (docs/numerics.md), so an FP16 kernel multiplies by s rounded to FP16."""
    import torch

    s = rng.uniform(v.s, 0.5, 4.0)
    s = torch.tensor(s, dtype=torch.float32).to(v.x.dtype.to_torch()).item()
    return {"x": rng.normal(v.x), "s": s}


SPECS = [
    spec.Kernel(
        add,
        accepted_hints=NARROW_ROWS,
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
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_128x128": {**_same("fp32", [128, 128], "a", "b", "out"),
                            "s": spec.scalar("fp32")},
            "f32_7x129": {**_same("fp32", [7, 129], "a", "b", "out"), "s": spec.scalar("fp32")},
        },
        inputs=lambda rng, v: {
            "a": rng.normal(v.a), "b": rng.normal(v.b), "s": rng.uniform(v.s, 0.5, 4.0)},
        reference=lambda a, b, s: (a.double() + b.double()) * s,
        tolerance=spec.Close(
            rtol=3 * FP32_ROUNDING, atol=0.0,
            reason="the kernel rounds twice in FP32 (after the add and after the mul), the "
            "reference once: at most 3 half ulps (2^-24 each, relative) apart",
        ),
    ),
    spec.Kernel(
        exp,
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_128x128": _same("fp32", [128, 128], "x", "out"),
            "f32_1x7": _same("fp32", [1, 7], "x", "out"),
            "f16_40x130": _same("fp16", [40, 130], "x", "out"),
        },
        inputs=lambda rng, v: {"x": rng.uniform(v.x, -8.0, 8.0)},
        reference=portable.exp,
        tolerance=lambda v: EXP_FP16 if v.x.dtype == pl.FP16 else EXP_FP32,
    ),
    spec.Kernel(
        mul_add,
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_128x128": _same("fp32", [128, 128], "a", "b", "c", "out"),
            "f32_31x97": _same("fp32", [31, 97], "a", "b", "c", "out"),
            "f16_64x128": _same("fp16", [64, 128], "a", "b", "c", "out"),
        },
        inputs=lambda rng, v: {"a": rng.uniform(v.a, -2.0, 2.0), "b": rng.uniform(v.b, -2.0, 2.0),
                               "c": rng.normal(v.c)},
        reference=lambda a, b, c: a.double() * b.double() + c.double(),
        tolerance=lambda v: MUL_ADD_FP16 if v.a.dtype == pl.FP16 else MUL_ADD_FP32,
    ),
    spec.Kernel(
        scale,
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_128x128": {**_same("fp32", [128, 128], "x", "out"), "s": spec.scalar("fp32")},
            "f32_5x300": {**_same("fp32", [5, 300], "x", "out"), "s": spec.scalar("fp32")},
            "f16_64x128": {**_same("fp16", [64, 128], "x", "out"), "s": spec.scalar("fp32")},
        },
        inputs=_scale_inputs,
        reference=lambda x, s: x.double() * s,
        tolerance=spec.Exact(
            "one rounding of an exact product (FP32 x FP32 is exact in FP64; in FP16 the scale "
            "is drawn FP16-representable), as the reference's final cast"
        ),
    ),
]
