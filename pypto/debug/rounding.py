"""Reference conversions in numpy: one exact rounding per hop, as the simulator does.

float64 holds every FP32, FP16, BF16 and FP8 value and every integer below 2**53 exactly,
so rounding a float64 magnitude once reproduces the simulator's single-rounding
conversions (pypto/sim/include/pto/numerics.hpp) bit for bit.
"""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import DataType
from ..ir.formats import CODE_VALUES as CODE_VALUES
from ..ir.formats import E8M0_VALUES as E8M0_VALUES
from ..ir.formats import FP4_VALUES as FP4_VALUES
from ..ir.formats import HF4_VALUES as HF4_VALUES
from ..ir.formats import HF8_VALUES as HF8_VALUES
from ..ir.formats import INT4_VALUES as INT4_VALUES
from ..ir.formats import round_magnitude
from ..ir.formats import to_e8m0 as to_e8m0
from ..ir.formats import to_fp4 as to_fp4
from ..ir.formats import to_hf4 as to_hf4
from ..ir.formats import to_hf8 as to_hf8

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
    DataType.INT4: (-8, 7),
    DataType.UINT4: (0, 15),
}


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
