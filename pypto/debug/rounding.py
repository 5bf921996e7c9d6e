"""Reference conversions in numpy: one exact rounding per hop, as the simulator does.

float64 holds every FP32, FP16, BF16 and FP8 value and every integer below 2**53 exactly,
so rounding a float64 magnitude once reproduces the simulator's single-rounding
conversions (pypto/sim/include/pto/numerics.hpp) bit for bit.
"""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import DataType

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
