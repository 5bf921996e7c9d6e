"""Activations: ReLU, SiLU, GELU (tanh form) and SwiGLU, from the elementwise primitives.

There is no sigmoid or tanh instruction, so both are built on exp:
    sigmoid(x) = 1 / (1 + exp(-x))
    GELU_tanh(x) = 0.5 x (1 + tanh(k (x + 0.044715 x^3)))  with k = sqrt(2 / pi)
                 = x * sigmoid(2 k (x + 0.044715 x^3))
The second spelling of GELU avoids the cancellation of `1 + tanh(...)` for negative x, so
its relative error stays bounded: the kernel computes x / (1 + exp(-2k (x + 0.044715 x^3))).

Tolerances count FP32 (FP16) roundings along each kernel's chain, where an error in the
argument of exp is multiplied by the argument's size; see docs/kernels.md.
"""

import math

import pypto.language as pl
from kernels._tiling import FP16_ULP, FP32_HALF_ULP, FP32_ULP, NARROW_ROWS
from pypto import spec
from pypto.golden import portable

GELU_CUBIC = 0.044715
GELU_SCALE = -2.0 * math.sqrt(2.0 / math.pi)  # exp's argument is GELU_SCALE * (x + c x^3)


@pl.jit
def relu(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.relu(x)
    return out


# SiLU, GELU and SwiGLU compute in FP32: FP16/BF16 variants (NARROW) widen on load and
# round once to the output's dtype at the end.


@pl.jit
def silu(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    NARROW: pl.constexpr = out.dtype != pl.FP32
    with pl.at(level=pl.Level.CORE_GROUP):
        xf = pl.cast(x, pl.FP32) if NARROW else x[:, :]
        y = pl.div(xf, pl.add(pl.exp(pl.neg(xf)), 1.0))
        out[:] = pl.cast(y, out.dtype) if NARROW else y
    return out


@pl.jit
def gelu(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    NARROW: pl.constexpr = out.dtype != pl.FP32
    with pl.at(level=pl.Level.CORE_GROUP):
        xf = pl.cast(x, pl.FP32) if NARROW else x[:, :]
        inner = pl.add(xf, pl.mul(pl.mul(pl.mul(xf, xf), xf), GELU_CUBIC))
        y = pl.div(xf, pl.add(pl.exp(pl.mul(inner, GELU_SCALE)), 1.0))
        out[:] = pl.cast(y, out.dtype) if NARROW else y
    return out


@pl.jit
def swiglu(gate: pl.Tensor, up: pl.Tensor, out: pl.Out[pl.Tensor]):
    NARROW: pl.constexpr = out.dtype != pl.FP32
    with pl.at(level=pl.Level.CORE_GROUP):
        g = pl.cast(gate, pl.FP32) if NARROW else gate[:, :]
        u = pl.cast(up, pl.FP32) if NARROW else up[:, :]
        y = pl.mul(pl.div(g, pl.add(pl.exp(pl.neg(g)), 1.0)), u)
        out[:] = pl.cast(y, out.dtype) if NARROW else y
    return out


def _same(dtype, shape, *names):
    return {name: (dtype, shape) for name in names}


# Special values in the first elements: NaN stays NaN, +-inf, signed zeros, the smallest
# subnormal of FP32 (flushes to 0 in FP16) and of FP16.
RELU_SPECIALS = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.401298464324817e-45,
                 -1.401298464324817e-45, 5.960464477539063e-08, -5.960464477539063e-08]


def _relu_inputs(rng, v):
    x = rng.normal(v.x)
    x.view(-1)[: len(RELU_SPECIALS)] = x.new_tensor(RELU_SPECIALS)
    return {"x": x}


def _gelu_reference(x):
    x = x.double()
    inner = math.sqrt(2.0 / math.pi) * (x + GELU_CUBIC * (x * x * x))
    return 0.5 * x * (1.0 + portable.tanh(inner))


def _silu_reference(x):
    x = x.double()
    return x * portable.sigmoid(x)


def _by_dtype(fp32, narrow):
    return lambda v: fp32 if v.out.dtype == pl.FP32 else narrow


# FP16 variants compute in FP32 and round once at the end: the FP32 value is within a few
# FP32 ulps of the true one, so the FP16 result is the correctly rounded value, or its
# neighbour when the true value lies within those few ulps of a rounding midpoint.  One FP16
# ulp (and one subnormal step, 2^-24, for the GELU tail near zero).
ONE_FP16_ULP = spec.Close(rtol=FP16_ULP, atol=2.0**-24, reason=(
    "computed in FP32 (within a few FP32 ulps) and rounded once to FP16: the correctly "
    "rounded value or, next to a rounding midpoint, its neighbour: 1 FP16 ulp (2^-24 below "
    "the normal range)"))
SILU = _by_dtype(
    spec.Close(rtol=5 * FP32_HALF_ULP, atol=0.0, reason=(
        "x / (1 + exp(-x)): expf is within 1 ulp (2 half ulps) and reaches the result damped "
        "by exp/(1+exp) <= 1, then the add and the div round, and the reference rounds once: "
        "5 half ulps (2^-24 each, relative)")),
    ONE_FP16_ULP,
)
SWIGLU = _by_dtype(
    spec.Close(rtol=6 * FP32_HALF_ULP, atol=0.0, reason=(
        "SiLU's 4 half ulps (expf's 2, the add, the div), the product with `up`, and the "
        "reference's rounding: 6 half ulps (2^-24 each, relative)")),
    ONE_FP16_ULP,
)
GELU = _by_dtype(
    spec.Close(rtol=24 * FP32_ULP, atol=0.0, reason=(
        "exp's argument a = -2k(x + 0.044715 x^3) carries 7 roundings (5 operations and the "
        "two constants; no cancellation: x and x^3 share a sign), and exp turns each into "
        "|a| times its size (|a| < 17 for |x| < 5): the a-priori bound is 7|a| + 4 half ulps, "
        "61 ulps; the rounding errors partly cancel and the seeded worst case is 18.4 ulps "
        "(both sims): 24 ulps, so that a one-ulp change of a constant, |a| "
        "more half ulps, does not pass")),
    ONE_FP16_ULP,
)

SPECS = [
    spec.Kernel(
        relu,
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_128x128": _same("fp32", [128, 128], "x", "out"),
            "f32_33x100": _same("fp32", [33, 100], "x", "out"),
            "f16_64x96": _same("fp16", [64, 96], "x", "out"),
        },
        inputs=_relu_inputs,
        reference=portable.relu,
        tolerance=spec.Exact("max(x, 0) is exact: the kernel returns x or 0 bit for bit (NaN "
                             "stays NaN; -0.0 and 0.0 compare equal)"),
    ),
    spec.Kernel(
        silu,
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_128x128": _same("fp32", [128, 128], "x", "out"),
            "f32_37x100": _same("fp32", [37, 100], "x", "out"),
            "f16_64x128": _same("fp16", [64, 128], "x", "out"),
        },
        inputs=lambda rng, v: {"x": rng.uniform(v.x, -8.0, 8.0)},
        reference=_silu_reference,
        tolerance=SILU,
    ),
    spec.Kernel(
        gelu,
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_128x128": _same("fp32", [128, 128], "x", "out"),
            "f32_19x200": _same("fp32", [19, 200], "x", "out"),
            "f16_64x128": _same("fp16", [64, 128], "x", "out"),
        },
        inputs=lambda rng, v: {"x": rng.uniform(v.x, -5.0, 5.0)},
        reference=_gelu_reference,
        tolerance=GELU,
    ),
    spec.Kernel(
        swiglu,
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_64x256": _same("fp32", [64, 256], "gate", "up", "out"),
            "f32_25x72": _same("fp32", [25, 72], "gate", "up", "out"),
            "f16_32x256": _same("fp16", [32, 256], "gate", "up", "out"),
        },
        inputs=lambda rng, v: {"gate": rng.uniform(v.gate, -8.0, 8.0), "up": rng.normal(v.up)},
        reference=lambda gate, up: _silu_reference(gate) * up.double(),
        tolerance=SWIGLU,
    ),
]
