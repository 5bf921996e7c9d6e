"""Matmul on the cube: one tile, a K loop with `matmul_acc`, split-K with atomic adds, and a
fused matmul + bias + SiLU.

FP16 (or BF16) inputs, FP32 accumulation and output.  Operands are loaded into Mat (L1),
moved to Left / Right (L0A / L0B); the product lives in Acc (L0C) and is stored from there.
Partial variants load tiles that hang over the tensors' edges (`valid_shape`): the zero
padding of K adds nothing, and only the valid [M, N] region is stored.  On Ascend910B the
vector unit cannot read Acc, so the fused kernel's epilogue reads the product back from
global memory in a second task (the same code runs on Ascend950).

Inputs of the exact kernels are multiples of 2^-6 in [-2, 2] (8 significant bits, as after an
8-bit quantisation): every product is a multiple of 2^-12 below 4 and every partial sum of
up to 512 of them a multiple of 2^-12 below 2^11 -- 23 bits, exact in FP32 whatever the
order.  So the FP32 result is the exact product whatever order a device accumulates in, and
those goldens are Exact.  Split-K takes inputs whose partial sums must round (see there).
"""

import pypto.language as pl
from kernels._tiling import CUBE_TILES, FP32_HALF_ULP, FP32_ULP, round_up
from pypto import spec
from pypto.golden import portable

MAT = pl.Mem.Mat
K_BLOCK = 64  # K per matmul_acc step of the K-blocked kernel
SPLITS = 4  # tasks of the split-K kernel, one K range each
# [M, K] @ [K, N] in tiles rounded up to 16 in every dimension (TM, TK, TN).


@pl.jit.incore
def matmul_tile(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    M: pl.constexpr = a.shape[0]
    K: pl.constexpr = a.shape[1]
    N: pl.constexpr = b.shape[1]
    TK: pl.constexpr = round_up(K, 16)
    ta = pl.load(a, [0, 0], [round_up(M, 16), TK], valid_shape=[M, K], target_memory=MAT)
    tb = pl.load(b, [0, 0], [TK, round_up(N, 16)], valid_shape=[K, N], target_memory=MAT)
    acc = pl.matmul(pl.move(ta, pl.Mem.Left), pl.move(tb, pl.Mem.Right))
    c = pl.store(acc, [0, 0], c)
    return c


@pl.jit.incore
def matmul_k_blocked(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    # The K loop: full K_BLOCK steps, then one partial step for K's remainder.
    M: pl.constexpr = a.shape[0]
    K: pl.constexpr = a.shape[1]
    N: pl.constexpr = b.shape[1]
    TM: pl.constexpr = round_up(M, 16)
    TN: pl.constexpr = round_up(N, 16)
    KB: pl.constexpr = K_BLOCK
    KFULL: pl.constexpr = K // KB * KB
    KTAIL: pl.constexpr = K % KB
    a0 = pl.load(a, [0, 0], [TM, KB], valid_shape=[M, KB], target_memory=MAT)
    b0 = pl.load(b, [0, 0], [KB, TN], valid_shape=[KB, N], target_memory=MAT)
    acc = pl.matmul(pl.move(a0, pl.Mem.Left), pl.move(b0, pl.Mem.Right))
    for k in pl.range(KB, KFULL, KB):
        ak = pl.load(a, [0, k], [TM, KB], valid_shape=[M, KB], target_memory=MAT)
        bk = pl.load(b, [k, 0], [KB, TN], valid_shape=[KB, N], target_memory=MAT)
        acc = pl.matmul_acc(acc, pl.move(ak, pl.Mem.Left), pl.move(bk, pl.Mem.Right))
    if KTAIL:  # the last, partial K block: its zero padding adds nothing
        at = pl.load(a, [0, KFULL], [TM, KB], valid_shape=[M, KTAIL], target_memory=MAT)
        bt = pl.load(b, [KFULL, 0], [KB, TN], valid_shape=[KTAIL, N], target_memory=MAT)
        acc = pl.matmul_acc(acc, pl.move(at, pl.Mem.Left), pl.move(bt, pl.Mem.Right))
    c = pl.store(acc, [0, 0], c)
    return c


@pl.jit.incore
def split_k_zero(c: pl.Out[pl.Tensor]):
    c = pl.store(pl.full(c.shape, pl.FP32, 0.0), [0, 0], c)
    return c


@pl.jit.incore
def split_k_part(a: pl.Tensor, b: pl.Tensor, c: pl.InOut[pl.Tensor], k0: pl.Scalar[pl.INT64]):
    # One of SPLITS equal K ranges, from k0.
    M: pl.constexpr = a.shape[0]
    N: pl.constexpr = b.shape[1]
    KC: pl.constexpr = a.shape[1] // SPLITS
    TKC: pl.constexpr = round_up(KC, 16)
    ta = pl.load(a, [0, k0], [round_up(M, 16), TKC], valid_shape=[M, KC], target_memory=MAT)
    tb = pl.load(b, [k0, 0], [TKC, round_up(N, 16)], valid_shape=[KC, N], target_memory=MAT)
    acc = pl.matmul(pl.move(ta, pl.Mem.Left), pl.move(tb, pl.Mem.Right))
    c = pl.store(acc, [0, 0], c, atomic=pl.AtomicType.Add)
    return c


@pl.jit
def matmul_split_k(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    pl.static_assert(a.shape[1] % SPLITS == 0, "split-K needs K divisible by SPLITS")
    c = split_k_zero(c)
    for s in pl.parallel(SPLITS):  # one task per K range: they accumulate concurrently
        c = split_k_part(a, b, c, s * (a.shape[1] // SPLITS))
    return c


@pl.jit.incore
def bias_silu(acc: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    TN: pl.constexpr = round_up(acc.shape[1], 16)
    t = pl.load(acc, [0, 0], [round_up(acc.shape[0], 16), TN], valid_shape=acc.shape)
    x = pl.col_expand_add(t, pl.load(bias, [0, 0], [1, TN], valid_shape=bias.shape))
    out = pl.store(pl.div(x, pl.add(pl.exp(pl.neg(x)), 1.0)), [0, 0], out)
    return out


@pl.jit
def matmul_bias_silu(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(a, b)
    out = bias_silu(acc, bias, out)
    return out


def _mm(dtype, m, k, n, *, bias=False):
    args = {"a": (dtype, [m, k]), "b": (dtype, [k, n])}
    if bias:
        args["bias"] = ("fp32", [1, n])
    return {**args, "out" if bias else "c": ("fp32", [m, n])}


def _quantized(rng, v, bound=128):
    """Multiples of 2^-6 in [-bound/64, bound/64] (FP16 and BF16 hold them exactly)."""
    return {"a": rng.integers(v.a, -bound, bound + 1) / 64,
            "b": rng.integers(v.b, -bound, bound + 1) / 64}




EXACT_PRODUCT = spec.Exact(
    "the inputs are multiples of 2^-6 in [-2, 2]: the products are exact and every partial "
    "sum (K <= 512) is a multiple of 2^-12 below 2^11, 23 bits, exact in FP32 in any order; "
    "the FP32 result is the exact product")


def _split_inputs(rng, v):
    """Non-negative multiples of 2^-6 in [0, 2], A's K range s scaled by 2^(-5 s) (FP16
    holds them, as subnormals at the smallest): the partial sum of K range s is a multiple of
    2^(-12 - 5 s) below 2^8, at most 20 bits, exact in FP32; the four together span ~34 bits,
    so the atomic adds round, and how depends on their order.  Non-negative: every running
    sum is at most the result (no cancellation)."""
    import torch

    a = rng.integers(v.a, 0, 129) / 64
    b = rng.integers(v.b, 0, 129) / 64
    kc = v.a.shape[1] // SPLITS
    scale = torch.tensor([2.0 ** (-5 * s) for s in range(SPLITS)]).repeat_interleave(kc)
    return {"a": (a.float() * scale).to(a.dtype), "b": b}


def _silu_inputs(rng, v):
    """A product in [-10, 10] or so (multiples of 2^-6 in [-1, 1], K <= 64), bias N(0, 1)."""
    return {**_quantized(rng, v, bound=64), "bias": rng.normal(v.bias)}


def _bias_silu_reference(a, b, bias):
    x = portable.matmul(a, b) + bias.double()
    return x * portable.sigmoid(x)


SPECS = [
    spec.Kernel(
        matmul_tile,
        accepted_hints=CUBE_TILES,
        variants={
            "f16_128x128x128": _mm("fp16", 128, 128, 128),
            "f16_13x40x50": _mm("fp16", 13, 40, 50),
            "bf16_64x96x32": _mm("bf16", 64, 96, 32),
        },
        inputs=_quantized,
        reference=portable.matmul,
        tolerance=EXACT_PRODUCT,
    ),
    spec.Kernel(
        matmul_k_blocked,
        accepted_hints=CUBE_TILES,
        variants={
            "f16_128x512x128": _mm("fp16", 128, 512, 128),
            "f16_24x200x40": _mm("fp16", 24, 200, 40),
        },
        inputs=_quantized,
        reference=portable.matmul,
        tolerance=EXACT_PRODUCT,
    ),
    spec.Kernel(
        matmul_split_k,
        accepted_hints=CUBE_TILES,
        variants={
            "f16_64x256x64": _mm("fp16", 64, 256, 64),
            "f16_24x256x40": _mm("fp16", 24, 256, 40),
        },
        inputs=_split_inputs,
        reference=portable.matmul,
        tolerance=spec.Close(rtol=FP32_ULP, atol=0.0, reason=(
            "each K range's partial sum is exact; the zero-initialised output takes the four "
            "partials by atomic adds in whatever order the tasks arrive, rounding 3 times: "
            "at most 2 ulps a priori (non-negative sums), and every one of the 24 orders, "
            "enumerated exactly on the seeded inputs, is within 1 ulp of the correctly "
            "rounded product: 1 ulp (rtol 2^-23) covers every order")),
    ),
    spec.Kernel(
        matmul_bias_silu,
        accepted_hints=CUBE_TILES,
        variants={
            "f16_64x64x128": _mm("fp16", 64, 64, 128, bias=True),
            "f16_13x40x50": _mm("fp16", 13, 40, 50, bias=True),
        },
        inputs=_silu_inputs,
        reference=_bias_silu_reference,
        tolerance=spec.Close(rtol=9 * FP32_HALF_ULP, atol=0.0, reason=(
            "the product is exact; x = product + bias rounds once, and SiLU's relative "
            "sensitivity to x is 1 + |x| (1 - sigmoid(x)), up to ~11 here; then expf (1 ulp), "
            "the add and the div round, and the reference once: a priori ~17 half ulps, "
            "seeded worst case 7.7 (both sims): 9 half ulps (2^-24 each, relative), which "
            "exp's argument one ulp off fails")),
    ),
]
