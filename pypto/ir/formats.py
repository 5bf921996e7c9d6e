"""Reference conversions into the element formats that are not IEEE-shaped, HF8 and
FP8E8M0 (docs/numerics.md), in numpy: the torch semantics (`pypto.debug.rounding`) and
goldens (`pypto.golden.portable.to_dtype`) use them; the simulator's encoders
(`Encode<hf8>`, `Encode<fp8e8m0>` in pypto/sim/include/pto/numerics.hpp) give the same
codes.  Both are stored and returned as uint8 codes."""

from __future__ import annotations

import numpy as np

from .dtypes import DataType, e8m0_value, hf8_value


def round_magnitude(s: np.ndarray, neg: np.ndarray, mode: str) -> np.ndarray:
    """Round non-negative float64 magnitudes to integers by `mode` (exact)."""
    k = np.floor(s)
    r = s - k  # exact: s and floor(s) share s's last bit
    if mode == "rint":
        return k + ((r > 0.5) | ((r == 0.5) & (k % 2 == 1)))
    if mode == "round":
        return k + (r >= 0.5)
    if mode == "floor":
        return k + (neg & (r > 0))
    if mode == "ceil":
        return k + (~neg & (r > 0))
    if mode == "trunc":
        return k
    if mode == "odd":
        return np.where((r > 0) & (k % 2 == 0), k + 1, k)
    raise ValueError(f"unknown rounding mode {mode!r}")


HF8_VALUES = np.array([hf8_value(c) for c in range(256)])
"""The value of every HiFloat8 code, by code."""
E8M0_VALUES = np.array([e8m0_value(c) for c in range(256)])
"""The value of every FP8E8M0 code, by code."""

_HF8_POSITIVE = np.array(sorted((HF8_VALUES[c], c) for c in range(0x80) if c != 0x6F))  # 0 .. 2^15


def _hf8_mantissa_bits(e: np.ndarray) -> np.ndarray:
    a = np.abs(e)
    return np.where(e < -15, 0, np.where(a <= 3, 3, np.where(a <= 7, 2, 1)))


def _overflows_to_big(neg: np.ndarray, mode: str) -> np.ndarray:
    if mode in ("rint", "round"):
        return np.ones_like(neg)
    if mode in ("ceil", "floor"):
        return ~neg if mode == "ceil" else neg
    return np.zeros_like(neg)


def to_hf8(x, mode: str) -> np.ndarray:
    """x (float64, exact source values) rounded once into HiFloat8 codes (uint8).

    The natural mode is round (ties away from zero), as pto-isa's A5 TCVT converts; the
    grid of the binade [2^e, 2^(e+1)) has 3, 2 or 1 mantissa bits (|e| <= 3, <= 7, <= 15),
    below 2^-15 only the powers of two down to 2^-22; one zero (0x00), NaN 0x80, overflow
    past 2^15 as IEEE's (inf where the mode rounds away, 2^15 otherwise)."""
    mode = "round" if mode == "none" else mode
    x = np.asarray(x, dtype=np.float64)
    neg, a, finite = np.signbit(x), np.abs(x), np.isfinite(x)
    _, fe = np.frexp(np.where(finite & (a > 0), a, 1.0))
    top = fe - 1
    q = np.maximum(top, -22) - _hf8_mantissa_bits(top)
    v = np.ldexp(round_magnitude(np.ldexp(np.where(finite, a, 0.0), -q), neg, mode), q)
    over = v > 2.0**15
    v = np.where(over, 2.0**15, v)
    idx = np.searchsorted(_HF8_POSITIVE[:, 0], v)
    codes = _HF8_POSITIVE[np.minimum(idx, len(_HF8_POSITIVE) - 1), 1].astype(np.uint8)
    codes = np.where(over & _overflows_to_big(neg, mode), 0x6F, codes)
    codes = np.where(np.isinf(x), 0x6F, codes)
    codes = np.where(neg & (codes != 0), codes | 0x80, codes)
    return np.where(np.isnan(x), 0x80, codes).astype(np.uint8)


def to_e8m0(x, mode: str) -> np.ndarray:
    """|x| (float64, exact) rounded once into FP8E8M0 codes (uint8), as torch's
    float8_e8m0fnu conversion does under rint (but for FP32 subnormals strictly between
    2^-127 and 1.5 * 2^-127, which go to the nearer 2^-127 here): the sign is dropped;
    zero and what rounds below 2^-127 give 2^-127 (0x00); NaN, inf and overflow past 2^127
    where the mode rounds up give NaN (0xFF), other overflow 2^127 (0xFE).  One value per
    binade, so rint's ties go up."""
    mode = "rint" if mode == "none" else mode
    x = np.asarray(x, dtype=np.float64)
    a, finite = np.abs(x), np.isfinite(x)
    up = np.zeros(x.shape, dtype=bool)
    _, fe = np.frexp(np.where(finite & (a > 0), a, 1.0))
    q = np.maximum(fe - 1, -127)
    k = round_magnitude(np.ldexp(np.where(finite, a, 0.0), -q), up, mode)
    _, ke = np.frexp(np.where(k > 0, k, 1.0))
    e = q + ke - 1
    codes = np.where(k > 0, np.clip(e + 127, 0, 254), 0)
    big = mode in ("rint", "round", "ceil")
    codes = np.where(e > 127, 0xFF if big else 0xFE, codes)
    return np.where(finite, codes, 0xFF).astype(np.uint8)


def element_values(dtype: DataType, codes):
    """The values (float64) of a torch tensor of `dtype` codes whose torch dtype does not
    have them (HF8 in torch.uint8); imports torch lazily."""
    import torch

    if dtype is not DataType.HF8:
        raise TypeError(f"{dtype.name} tensors hold their values")
    return torch.from_numpy(HF8_VALUES)[codes.detach().cpu().to(torch.int64)]
