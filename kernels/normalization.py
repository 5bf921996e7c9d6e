"""Row-wise normalizations over partial tiles: softmax, RMSNorm, LayerNorm.

Tile kernels computing in FP32 (FP16 variants widen on load and round once when storing).
Each row block is one [TR, TN] tile whose padding must be neutral for the row reductions:
- softmax fills it with -inf, so it neither wins the maximum nor adds to the sum
  (exp(-inf - max) = 0);
- RMSNorm's zero padding squares to zero;
- LayerNorm's padding becomes -mean once the mean is subtracted, so it is zeroed again
  before the variance is summed.
"""

import pypto.language as pl
from kernels._tiling import FP16_ULP, FP32_HALF_ULP, NARROW_ROWS, round_up
from pypto import spec
from pypto.golden import portable

TR = 16  # rows per tile
EPS = 1e-5


@pl.jit.incore
def softmax(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    M: pl.constexpr = x.shape[0]
    N: pl.constexpr = x.shape[1]
    TN: pl.constexpr = round_up(N, 16)
    NARROW: pl.constexpr = x.dtype != pl.FP32
    for r in pl.unroll(0, M, TR):
        t = pl.load(x, [r, 0], [TR, TN], valid_shape=[min(TR, M - r), N])
        xf = pl.fillpad(pl.cast(t, pl.FP32) if NARROW else t, pl.PadValue.min)
        tmp = pl.create_tile([TR, TN], pl.FP32)
        e = pl.row_expand_expdif(xf, pl.row_max(xf, tmp))
        y = pl.row_expand_div(e, pl.row_sum(e, tmp))
        out = pl.store(pl.cast(y, out.dtype) if NARROW else y, [r, 0], out)
    return out


@pl.jit.incore
def rms_norm(x: pl.Tensor, gamma: pl.Tensor, out: pl.Out[pl.Tensor]):
    M: pl.constexpr = x.shape[0]
    N: pl.constexpr = x.shape[1]
    TN: pl.constexpr = round_up(N, 16)
    NARROW: pl.constexpr = x.dtype != pl.FP32
    g = pl.load(gamma, [0, 0], [1, TN], valid_shape=[1, N])
    gf = pl.cast(g, pl.FP32) if NARROW else g
    for r in pl.unroll(0, M, TR):
        t = pl.load(x, [r, 0], [TR, TN], valid_shape=[min(TR, M - r), N])
        xf = pl.cast(t, pl.FP32) if NARROW else t
        tmp = pl.create_tile([TR, TN], pl.FP32)
        mean_sq = pl.div(pl.row_sum(pl.mul(xf, xf), tmp), float(N))
        y = pl.col_expand_mul(pl.row_expand_mul(xf, pl.rsqrt(pl.add(mean_sq, EPS))), gf)
        out = pl.store(pl.cast(y, out.dtype) if NARROW else y, [r, 0], out)
    return out


@pl.jit.incore
def layer_norm(x: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, out: pl.Out[pl.Tensor]):
    M: pl.constexpr = x.shape[0]
    N: pl.constexpr = x.shape[1]
    TN: pl.constexpr = round_up(N, 16)
    NARROW: pl.constexpr = x.dtype != pl.FP32
    g = pl.load(gamma, [0, 0], [1, TN], valid_shape=[1, N])
    b = pl.load(beta, [0, 0], [1, TN], valid_shape=[1, N])
    gf = pl.cast(g, pl.FP32) if NARROW else g
    bf = pl.cast(b, pl.FP32) if NARROW else b
    for r in pl.unroll(0, M, TR):
        t = pl.load(x, [r, 0], [TR, TN], valid_shape=[min(TR, M - r), N])
        xf = pl.cast(t, pl.FP32) if NARROW else t
        tmp = pl.create_tile([TR, TN], pl.FP32)
        mean = pl.div(pl.row_sum(xf, tmp), float(N))
        centred = pl.fillpad(pl.row_expand_sub(xf, mean), pl.PadValue.zero)
        var = pl.div(pl.row_sum(pl.mul(centred, centred), tmp), float(N))
        normed = pl.row_expand_mul(centred, pl.rsqrt(pl.add(var, EPS)))
        y = pl.col_expand_add(pl.col_expand_mul(normed, gf), bf)
        out = pl.store(pl.cast(y, out.dtype) if NARROW else y, [r, 0], out)
    return out


def _like(dtype, m, n, *vectors):
    return {"x": (dtype, [m, n]), "out": (dtype, [m, n]),
            **{name: (dtype, [1, n]) for name in vectors}}


def _softmax_reference(x):
    return portable.softmax(x, dim=-1)


def _rms_reference(x, gamma):
    x = x.double()
    mean_sq = portable.mean(x * x, dim=-1, keepdim=True)
    return x * portable.rsqrt(mean_sq + EPS) * gamma.double()


def _layer_norm_reference(x, gamma, beta):
    x = x.double()
    centred = x - portable.mean(x, dim=-1, keepdim=True)
    var = portable.mean(centred * centred, dim=-1, keepdim=True)
    return centred * portable.rsqrt(var + EPS) * gamma.double() + beta.double()


ONE_FP16_ULP = spec.Close(rtol=FP16_ULP, atol=2.0**-24, reason=(
    "computed in FP32 (within a few FP32 ulps) and rounded once to FP16: the correctly "
    "rounded value or, next to a rounding midpoint, its neighbour: 1 FP16 ulp"))


# Every output of a row depends on the row's sums, whose sequential FP32 rounding the
# a-priori bounds charge with up to N - 1 half ulps; on these positive sums it stays near 2.
SOFTMAX = spec.Close(rtol=12 * FP32_HALF_ULP, atol=0.0, reason=(
    "exp(x - max) with the difference rounded: its relative error is |x - max| times 2^-24 "
    "(up to 16 on [-8, 8)), then expf (1 ulp), the row sum, the division and the "
    "reference's rounding; seeded worst case 9.1 half ulps (both sims): 12 half ulps "
    "(2^-24 each, relative), which x scaled by one ulp before the max (up to 32 more) fails"))
RMS_NORM = spec.Close(rtol=7 * FP32_HALF_ULP, atol=0.0, reason=(
    "x*x, the row sum of N squares, / N, + eps, sqrt (halves the error so far), 1/sqrt, "
    "* x, * gamma and the reference's rounding, no cancellation anywhere: seeded worst case "
    "6.0 half ulps (both sims): 7 half ulps (2^-24 each, relative), which gamma one ulp "
    "larger (up to 2 more) fails"))
LAYER_NORM = spec.Close(rtol=4 * FP32_HALF_ULP, atol=6 * FP32_HALF_ULP, reason=(
    "the mean's rounding moves every centred value of a row by one absolute amount, and "
    "y = normed * gamma + beta can cancel to near zero: an absolute part (2^-24 * 6; the "
    "seeded worst case near zero is 2.9) and a relative part (the variance's sum, rsqrt, "
    "* gamma, + beta and the reference: 4 half ulps); the seeded worst case uses 86% of it "
    "(both sims), and gamma one ulp larger (2 half ulps more) uses 114%: it does not pass"))
LAYER_NORM_FP16 = spec.Close(rtol=FP16_ULP, atol=2.0**-21, reason=(
    "the FP32 result (within 5 FP32 half ulps, plus 2^-22 absolute near zero) rounded once "
    "to FP16: 1 FP16 ulp, and 2^-21 absolute where beta cancels normed * gamma"))


def _by_dtype(fp32, narrow):
    return lambda v: fp32 if v.out.dtype == pl.FP32 else narrow


SPECS = [
    spec.Kernel(
        softmax,
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_32x128": _like("fp32", 32, 128),
            "f32_21x100": _like("fp32", 21, 100),
            "f16_16x200": _like("fp16", 16, 200),
        },
        inputs=lambda rng, v: {"x": rng.uniform(v.x, -8.0, 8.0)},
        reference=_softmax_reference,
        tolerance=_by_dtype(SOFTMAX, ONE_FP16_ULP),
    ),
    spec.Kernel(
        rms_norm,
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_32x128": _like("fp32", 32, 128, "gamma"),
            "f32_21x100": _like("fp32", 21, 100, "gamma"),
            "f16_16x200": _like("fp16", 16, 200, "gamma"),
        },
        inputs=lambda rng, v: {"x": rng.normal(v.x, mean=1.0, std=3.0),
                               "gamma": rng.uniform(v.gamma, 0.5, 1.5)},
        reference=_rms_reference,
        tolerance=_by_dtype(RMS_NORM, ONE_FP16_ULP),
    ),
    spec.Kernel(
        layer_norm,
        accepted_hints=NARROW_ROWS,
        variants={
            "f32_32x128": _like("fp32", 32, 128, "gamma", "beta"),
            "f32_21x100": _like("fp32", 21, 100, "gamma", "beta"),
            "f16_16x200": _like("fp16", 16, 200, "gamma", "beta"),
        },
        inputs=lambda rng, v: {"x": rng.normal(v.x, mean=1.0, std=3.0),
                               "gamma": rng.uniform(v.gamma, 0.5, 1.5),
                               "beta": rng.uniform(v.beta, -0.5, 0.5)},
        reference=_layer_norm_reference,
        tolerance=_by_dtype(LAYER_NORM, LAYER_NORM_FP16),
    ),
]
