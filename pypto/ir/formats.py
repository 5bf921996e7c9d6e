"""Reference conversions into the element formats that are not IEEE-shaped, HF8 and
FP8E8M0, and into the 4-bit ones, FP4 and HF4 (docs/numerics.md), in numpy: the torch
semantics (`pypto.debug.rounding`) and goldens (`pypto.golden.portable.to_dtype`) use them;
the simulator's encoders (`Encode<hf8>`, `Encode<fp8e8m0>`, `Encode<fp4e2m1>`,
`Encode<hf4>` in pypto/sim/include/pto/numerics.hpp) give the same codes.  All are
returned as uint8 codes, one per element (a 4-bit code in the low nibble); `pack_nibbles`
and `unpack_nibbles` convert between those and the bytes a 4-bit tensor is stored in."""

from __future__ import annotations

import numpy as np

from .dtypes import DataType, e8m0_value, fp4_value, hf4_value, hf8_value, int4_value


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


FP4_VALUES = np.array([fp4_value(c) for c in range(16)])
"""The value of every FP4 (E2M1) code, by code."""
HF4_VALUES = np.array([hf4_value(c) for c in range(16)])
"""The value of every HF4 (S1E1M2) code, by code."""
INT4_VALUES = np.array([int4_value(c) for c in range(16)], dtype=np.float64)
"""The value of every INT4 code, by code (UINT4's code is its value)."""
UINT4_VALUES = np.arange(16, dtype=np.float64)
"""The value of every UINT4 code."""

CODE_VALUES = {DataType.HF8: HF8_VALUES, DataType.FP4: FP4_VALUES, DataType.HF4: HF4_VALUES,
               DataType.INT4: INT4_VALUES, DataType.UINT4: UINT4_VALUES}
"""The value of every code of the types whose torch tensors hold codes, by type."""


def _to_small_float(x, mode: str, p: int, max_finite: float) -> tuple[np.ndarray, np.ndarray]:
    """x (float64, exact) rounded once by `mode` onto a 4-bit float grid with `p` significand
    bits and smallest normal binade [1, 2) (so subnormal steps of 2^(1 - p)): the rounded
    magnitudes and the signs (a code is the sign in bit 3 and the magnitude's index in the
    grid below it).  Neither 4-bit float has an
    infinity or a NaN: what IEEE would round to inf (overflow where the mode rounds away, or
    an infinite input) saturates to +-max_finite, and NaN gives +0 (code 0), as a NaN
    converted to an integer gives 0.  A negative value rounding to zero keeps its sign
    (code 8, -0)."""
    x = np.asarray(x, dtype=np.float64)
    neg, a, finite = np.signbit(x), np.abs(x), np.isfinite(x)
    _, fe = np.frexp(np.where(finite & (a > 0), a, 1.0))
    q = np.maximum(fe - 1, 0) - (p - 1)
    v = np.ldexp(round_magnitude(np.ldexp(np.where(finite, a, 0.0), -q), neg, mode), q)
    v = np.minimum(np.where(finite, v, np.inf), max_finite)
    return v, neg


def to_fp4(x, mode: str) -> np.ndarray:
    """x (float64, exact) rounded once into FP4 (E2M1) codes (uint8, 0 .. 15), by `mode`
    (the natural mode is rint); see `_to_small_float` for what has no code."""
    mode = "rint" if mode == "none" else mode
    v, neg = _to_small_float(x, mode, 2, 6.0)
    grid = FP4_VALUES[:8]  # 0, 0.5, 1, 1.5, 2, 3, 4, 6: increasing with the code
    codes = np.searchsorted(grid, v).astype(np.uint8)
    codes = np.where(neg, codes | 0x8, codes)
    return np.where(np.isnan(np.asarray(x, dtype=np.float64)), 0, codes).astype(np.uint8)


def to_hf4(x, mode: str) -> np.ndarray:
    """x (float64, exact) rounded once into HF4 (S1E1M2) codes (uint8, 0 .. 15), by `mode`
    (the natural mode is rint): a grid of 0.25 up to 1.75; see `_to_small_float` for what
    has no code."""
    mode = "rint" if mode == "none" else mode
    v, neg = _to_small_float(x, mode, 3, 1.75)
    codes = (v * 4).astype(np.uint8)
    codes = np.where(neg, codes | 0x8, codes)
    return np.where(np.isnan(np.asarray(x, dtype=np.float64)), 0, codes).astype(np.uint8)


def pack_nibbles(codes: np.ndarray) -> np.ndarray:
    """4-bit codes (uint8, last axis even) as the bytes holding them: element 2i in the
    low nibble of byte i, element 2i + 1 in its high nibble (torch's float4_e2m1fn_x2 order,
    and pto-isa's)."""
    codes = np.asarray(codes, dtype=np.uint8)
    if codes.shape[-1] % 2:
        raise ValueError(f"4-bit elements pack two to a byte: the last axis of "
                         f"{list(codes.shape)} is odd")
    return (codes[..., 0::2] & 0xF) | ((codes[..., 1::2] & 0xF) << 4)


def unpack_nibbles(data: np.ndarray) -> np.ndarray:
    """The 4-bit codes (uint8, one per element, last axis doubled) held in `data`'s bytes
    (`pack_nibbles`' inverse)."""
    data = np.asarray(data, dtype=np.uint8)
    out = np.empty((*data.shape[:-1], data.shape[-1] * 2), dtype=np.uint8)
    out[..., 0::2] = data & 0xF
    out[..., 1::2] = data >> 4
    return out


def element_values(dtype: DataType, codes):
    """The values (float64) of a torch tensor of `dtype` codes whose torch dtype does not
    have them (HF8 in torch.uint8; a 4-bit type's bytes, two codes each, the last dimension
    doubling); imports torch lazily."""
    import torch

    if dtype not in CODE_VALUES:
        raise TypeError(f"{dtype.name} tensors hold their values")
    codes = codes.detach().cpu()
    if dtype.packed:  # bytes (or float4_e2m1fn_x2 pairs): two codes each
        codes = torch.from_numpy(unpack_nibbles(codes.view(torch.uint8).numpy()))
    return torch.from_numpy(CODE_VALUES[dtype])[codes.to(torch.int64)]
