"""Reference conversions in numpy: one exact rounding per hop, as the simulator does.

float64 holds every FP32, FP16, BF16 and FP8 value and every integer below 2**53 exactly,
so rounding a float64 magnitude once reproduces the simulator's single-rounding
conversions (pypto/sim/include/pto/numerics.hpp) bit for bit.
"""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import DataType, e8m0_value, hf8_value

# (significand bits incl. the implicit one, smallest normal exponent, largest finite, has inf)
FORMATS = {
    DataType.FP16: (11, -14, 65504.0, True),
    DataType.BF16: (8, -126, 3.3895313892515355e38, True),
    DataType.FP32: (24, -126, 3.4028234663852886e38, True),
    DataType.FP8E4M3FN: (4, -6, 448.0, False),
    DataType.FP8E5M2: (3, -14, 57344.0, True),
}

INT_RANGES = {
    DataType.BOOL: (0, 1),
    DataType.INT8: (-(1 << 7), (1 << 7) - 1),
    DataType.INT16: (-(1 << 15), (1 << 15) - 1),
    DataType.INT32: (-(1 << 31), (1 << 31) - 1),
    DataType.INT64: (-(1 << 63), (1 << 63) - 1),
    DataType.UINT8: (0, (1 << 8) - 1),
    DataType.UINT16: (0, (1 << 16) - 1),
    DataType.UINT32: (0, (1 << 32) - 1),
    DataType.UINT64: (0, (1 << 64) - 1),
}


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


def to_float_format(x, dst: DataType, mode: str) -> np.ndarray:
    """x (float64, exact source values) rounded once into the float format `dst`."""
    p, emin, max_finite, has_inf = FORMATS[dst]
    mode = "rint" if mode == "none" else mode
    x = np.asarray(x, dtype=np.float64)
    neg, a, finite = np.signbit(x), np.abs(x), np.isfinite(x)
    _, e = np.frexp(np.where(finite & (a > 0), a, 1.0))
    q = np.maximum(e - 1, emin) - (p - 1)  # exponent of the last kept bit
    v = np.ldexp(round_magnitude(np.ldexp(np.where(finite, a, 0.0), -q), neg, mode), q)
    big = np.inf if has_inf else max_finite  # formats without inf saturate
    if mode in ("rint", "round"):
        to_big = np.ones_like(neg)
    elif mode in ("ceil", "floor"):
        to_big = ~neg if mode == "ceil" else neg
    else:
        to_big = np.zeros_like(neg)
    v = np.where(v > max_finite, np.where(to_big, big, max_finite), v)
    v = np.where(np.isinf(x), big, v)
    v = np.where(neg, -v, v)
    return np.where(np.isnan(x), np.nan, v)


def to_integer(x, dst: DataType, mode: str) -> np.ndarray:
    """x (float64, exact) rounded to an integer by `mode`, saturated to `dst`; NaN → 0."""
    lo, hi = INT_RANGES[dst]
    mode = "trunc" if mode == "none" else mode
    x = np.asarray(x, dtype=np.float64)
    neg = np.signbit(x)
    k = round_magnitude(np.where(np.isfinite(x), np.abs(x), 0.0), neg, mode)
    v = np.where(np.isinf(x), np.inf, k)
    v = np.clip(np.where(neg, -v, v), lo, hi)
    return np.where(np.isnan(x), 0, v)


# -- HF8 and FP8E8M0: formats that are not IEEE-shaped (docs/numerics.md) --------------------
# Both are stored and returned as their uint8 codes; the simulator's encoders are EncodeHf8 /
# EncodeE8m0 in pypto/sim/include/pto/numerics.hpp.


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
    float8_e8m0fnu conversion does under rint: the sign is dropped; zero and what rounds
    below 2^-127 give 2^-127 (0x00); NaN, inf and overflow past 2^127 where the mode rounds
    up give NaN (0xFF), other overflow 2^127 (0xFE).  One value per binade, so rint's ties
    go up."""
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
