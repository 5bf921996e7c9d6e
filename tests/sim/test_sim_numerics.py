"""Bit-exactness of the simulator's element conversions (pypto/sim/include/pto/numerics.hpp).

References are torch (for round-to-nearest-even, what goldens use) and two models: the
vectorized numpy one that torch codegen uses (pypto/debug/rounding.py; exact for
float32/float16 inputs, which float64 holds exactly) and an integer one written here for
int64 inputs, which float64 cannot hold.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pypto.debug import rounding
from pypto.ir.dtypes import DataType as DT

MODES = {"none": 0, "rint": 1, "round": 2, "floor": 3, "ceil": 4, "trunc": 5, "odd": 6}

# numpy storage of each element type; the narrow floats travel as their bit patterns.
STORAGE = {
    DT.BOOL: np.bool_,
    DT.INT8: np.int8,
    DT.INT16: np.int16,
    DT.INT32: np.int32,
    DT.INT64: np.int64,
    DT.UINT8: np.uint8,
    DT.UINT16: np.uint16,
    DT.UINT32: np.uint32,
    DT.FP16: np.uint16,
    DT.BF16: np.uint16,
    DT.FP32: np.float32,
    DT.FP8E4M3FN: np.uint8,
    DT.FP8E5M2: np.uint8,
}
NARROW_FLOATS = (DT.FP16, DT.BF16, DT.FP8E4M3FN, DT.FP8E5M2)

CANONICAL_NAN = {DT.FP16: 0x7E00, DT.BF16: 0x7FC0, DT.FP8E4M3FN: 0x7F, DT.FP8E5M2: 0x7E}


def ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def convert(sim, dst: DT, src: DT, values, mode: str = "rint") -> np.ndarray:
    x = np.ascontiguousarray(values, dtype=STORAGE[src])
    out = np.empty(x.shape, dtype=STORAGE[dst])
    assert sim.sim_convert(dst.code, src.code, ptr(x), ptr(out), x.size, MODES[mode]) == 0
    return out


def f32(bits) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def bits_u32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def torch_bits(values: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """torch's own round-to-nearest-even conversion, as unsigned bit patterns."""
    t = torch.from_numpy(values).to(dtype)
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[t.element_size()]
    bits = t.view(view).numpy()
    return bits.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[t.element_size()])


def decode(dtype: DT, stored: np.ndarray) -> np.ndarray:
    """The values of stored elements as float64 (exact for every float format here)."""
    if dtype in NARROW_FLOATS:
        view = torch.int16 if dtype in (DT.FP16, DT.BF16) else torch.uint8
        t = torch.from_numpy(stored.view(np.int16) if view is torch.int16 else stored)
        return t.view(dtype.to_torch()).to(torch.float64).numpy()
    return stored.astype(np.float64)


def ref_to_float(x, dst: DT, mode: str) -> np.ndarray:
    """x (float64, exact source values) rounded once into the float format dst, as float64."""
    return rounding.to_float_format(x, dst, mode)


def ref_to_int(x, dst: DT, mode: str) -> np.ndarray:
    """x (float64, exact) rounded to an integer by mode, saturated to dst; NaN -> 0."""
    return rounding.to_integer(x, dst, mode).astype(STORAGE[dst])


def ref_int_round(v: int, p: int, mode: str) -> float:
    """Integer v rounded once to p significand bits (no exponent limit), exactly."""
    mode = "rint" if mode == "none" else mode
    if v == 0:
        return 0.0
    neg, a = v < 0, abs(v)
    q = a.bit_length() - p
    if q <= 0:
        return float(v)
    k, r = divmod(a, 1 << q)
    half = 1 << (q - 1)
    up = {
        "rint": r > half or (r == half and k % 2 == 1),
        "round": r >= half,
        "floor": neg and r > 0,
        "ceil": not neg and r > 0,
        "trunc": False,
        "odd": False,
    }[mode]
    k += up
    if mode == "odd" and r > 0:
        k |= 1
    return float(-(k << q) if neg else k << q)


def assert_same_floats(dst: DT, got: np.ndarray, want: np.ndarray) -> None:
    """Equal values with equal signs of zero; NaN matches NaN."""
    vals = decode(dst, got)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(vals), nan)
    np.testing.assert_array_equal(vals[~nan], want[~nan])
    np.testing.assert_array_equal(np.signbit(vals[~nan]), np.signbit(want[~nan]))


def boundary_ints() -> np.ndarray:
    base = [2047, 2048, 2049, 2050, 2051, 2052, 4095, 4096, 4097, 4098, 4099, 4100, 65535, 65536]
    base += list(range(65503, 65522)) + [2**24 - 1, 2**24, 2**24 + 1]
    vals = base + [-v for v in base] + [-(2**31), 2**31 - 1]
    return np.array(vals, dtype=np.int32)


def random_f32(rng, n: int) -> np.ndarray:
    """Random float32 bit patterns plus values that stress FP16/BF16 rounding."""
    bits = rng.integers(0, 2**32, n, dtype=np.uint32)
    # Signalling NaNs become quiet ones so float64 references can widen them silently;
    # test_nan_and_infinity_edges feeds signalling NaNs to the simulator directly.
    patterns = f32(np.where((bits & 0x7F800000) == 0x7F800000, bits | 0x00400000, bits))
    f16s = rng.integers(0, 0x7C00, n // 4, dtype=np.uint16).view(np.float16).astype(np.float64)
    _, e = np.frexp(f16s)
    ulp = np.ldexp(1.0, np.maximum(e - 1, -14) - 10)  # FP16's spacing at each value
    ties = (f16s + ulp / 2).astype(np.float32)  # exact halfway points between FP16 values
    near = (f16s + ulp * rng.uniform(0, 1, f16s.size)).astype(np.float32)
    special = np.array(
        [0.0, -0.0, np.inf, -np.inf, 65504, 65519, 65519.996, 65520, 65536, 1e9, 2.0**-24,
         2.0**-25, 3 * 2.0**-26, 2.0**-14, 5.96e-8, 1e-45, -1e-45, 3.4e38, 448, 464, 480, 57344,
         61440, 1.0 + 2.0**-8, 1.0 + 2.0**-9, 1.0 + 3 * 2.0**-9],
        dtype=np.float32,
    )
    mixed = np.concatenate([patterns, ties, near, special])
    return np.concatenate([mixed, -mixed])


# -- 1, 2: integers to FP16 / BF16 ----------------------------------------------------------


def test_int32_to_fp16_matches_torch(sim):
    vals = np.concatenate([np.arange(-(2**17), 2**17 + 1, dtype=np.int32), boundary_ints()])
    got = convert(sim, DT.FP16, DT.INT32, vals)
    # torch goes int32 -> float -> half; one direct rounding agrees because every int32 that
    # float rounds sits at or above 2**24, far past FP16's overflow at 65520.
    want = torch_bits(vals, torch.float16)
    np.testing.assert_array_equal(got, want)
    edge = convert(sim, DT.FP16, DT.INT32, [65519, 65520, -65520])
    np.testing.assert_array_equal(edge, [0x7BFF, 0x7C00, 0xFC00])  # 65504, +inf, -inf


def test_int32_to_bf16_through_fp32_matches_torch(sim):
    rng = np.random.default_rng(2)
    vals = np.concatenate(
        [
            np.arange(-(2**17), 2**17 + 1, dtype=np.int32),
            boundary_ints(),
            rng.integers(-(2**31), 2**31, 100_000, dtype=np.int64).astype(np.int32),
        ]
    )
    via_fp32 = convert(sim, DT.FP32, DT.INT32, vals)
    got = convert(sim, DT.BF16, DT.FP32, via_fp32)
    np.testing.assert_array_equal(got, torch_bits(vals, torch.bfloat16))


def test_int32_to_bf16_direct_is_one_rounding(sim):
    x = 2**24 + 2**16 + 1  # FP32 rounds it to the BF16 tie 2**24 + 2**16, which then goes even
    two_hops = convert(sim, DT.BF16, DT.FP32, convert(sim, DT.FP32, DT.INT32, [x]))
    direct = convert(sim, DT.BF16, DT.INT32, [x])
    assert decode(DT.BF16, two_hops)[0] == 2**24
    assert decode(DT.BF16, direct)[0] == 2**24 + 2**17
    rng = np.random.default_rng(3)
    vals = np.concatenate([boundary_ints(), rng.integers(-(2**31), 2**31, 5000).astype(np.int32)])
    for mode in MODES:
        want = np.array([ref_int_round(int(v), 8, mode) for v in vals])
        assert_same_floats(DT.BF16, convert(sim, DT.BF16, DT.INT32, vals, mode), want)


# -- 3: FP32 <-> FP16 / BF16 round to nearest even ------------------------------------------


@pytest.mark.parametrize("dst", [DT.FP16, DT.BF16])
def test_fp32_to_narrow_matches_torch(sim, dst):
    x = random_f32(np.random.default_rng(4), 1 << 20)
    got = convert(sim, dst, DT.FP32, x)
    want = torch_bits(x, dst.to_torch())
    nan = np.isnan(x)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    assert nan.sum() > 1000 and np.all(got[nan] == CANONICAL_NAN[dst])


@pytest.mark.parametrize("src", [DT.FP16, DT.BF16])
def test_narrow_to_fp32_exhaustive(sim, src):
    patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    got = convert(sim, DT.FP32, src, patterns)
    want = torch.from_numpy(patterns.view(np.int16)).view(src.to_torch()).float().numpy()
    nan = np.isnan(want)
    np.testing.assert_array_equal(bits_u32(got[~nan]), bits_u32(want[~nan]))
    assert np.all(bits_u32(got[nan]) == 0x7FC00000)


# -- FP8 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dst", [DT.FP8E4M3FN, DT.FP8E5M2])
def test_fp32_to_fp8_matches_torch(sim, dst):
    rng = np.random.default_rng(5)
    spread = np.ldexp(rng.uniform(-1, 1, 1 << 16), rng.integers(-24, 18, 1 << 16, dtype=np.int32))
    x = np.concatenate([random_f32(rng, 1 << 16), rng.uniform(-600, 600, 1 << 16), spread])
    x = x.astype(np.float32)
    got = convert(sim, dst, DT.FP32, x)
    want_bits = torch_bits(x, dst.to_torch())
    want = decode(dst, want_bits)
    nan = np.isnan(want)
    np.testing.assert_array_equal(got[~nan], want_bits[~nan])
    np.testing.assert_array_equal(np.isnan(decode(dst, got)), nan)


@pytest.mark.parametrize("src", [DT.FP8E4M3FN, DT.FP8E5M2])
def test_fp8_to_fp32_exhaustive(sim, src):
    patterns = np.arange(256, dtype=np.uint8)
    got = convert(sim, DT.FP32, src, patterns).astype(np.float64)
    want = decode(src, patterns)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)])


def test_fp8e4m3fn_saturates(sim):
    """No infinity in E4M3FN: overflow and +-inf saturate to +-448 in every mode, as in torch."""
    x = np.array([448, 464, 479.9, 480, 1e6, np.inf, -1e6, -np.inf, np.nan], dtype=np.float32)
    for mode in MODES:
        got = convert(sim, DT.FP8E4M3FN, DT.FP32, x, mode)
        np.testing.assert_array_equal(got, [0x7E] * 6 + [0xFE] * 2 + [0x7F], err_msg=mode)


def test_nan_and_infinity_edges(sim):
    nans = f32([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF])
    for dst, canonical in CANONICAL_NAN.items():
        assert np.all(convert(sim, dst, DT.FP32, nans) == canonical), dst
    np.testing.assert_array_equal(bits_u32(convert(sim, DT.FP32, DT.FP32, nans)), [0x7FC00000] * 4)
    for dst in (DT.INT8, DT.INT32, DT.UINT8, DT.INT64):
        assert np.all(convert(sim, dst, DT.FP32, nans, "rint") == 0), dst
        info = np.iinfo(STORAGE[dst])
        got = convert(sim, dst, DT.FP32, [np.inf, -np.inf, 1e30, -1e30], "floor")
        np.testing.assert_array_equal(got, [info.max, info.min, info.max, info.min])
    np.testing.assert_array_equal(convert(sim, DT.BOOL, DT.FP32, [0, -0.0, 1e-45, np.nan]), [0, 0,
                                                                                             1, 1])


# -- 4: every rounding mode against the models ----------------------------------------------


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("dst", [DT.FP16, DT.BF16, DT.FP8E4M3FN, DT.FP8E5M2])
def test_fp32_to_float_modes(sim, dst, mode):
    x = random_f32(np.random.default_rng(6), 1 << 15)
    assert_same_floats(dst, convert(sim, dst, DT.FP32, x, mode), ref_to_float(x, dst, mode))


@pytest.mark.parametrize("mode", list(MODES))
def test_fp32_to_int32_modes(sim, mode):
    rng = np.random.default_rng(7)
    halves = rng.integers(-(2**22), 2**22, 20_000) + 0.5
    x = np.concatenate(
        [
            random_f32(rng, 1 << 15),
            halves,
            rng.uniform(-3e9, 3e9, 20_000),
            rng.uniform(-4, 4, 20_000),
            [2**31 - 128, 2**31, -(2**31), -(2**31) - 256, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5],
        ]
    ).astype(np.float32)
    got = convert(sim, DT.INT32, DT.FP32, x, mode)
    np.testing.assert_array_equal(got, ref_to_int(x, DT.INT32, mode))


@pytest.mark.parametrize("mode", list(MODES))
def test_fp16_to_int8_modes_exhaustive(sim, mode):
    patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    got = convert(sim, DT.INT8, DT.FP16, patterns, mode)
    want = ref_to_int(patterns.view(np.float16).astype(np.float64), DT.INT8, mode)
    np.testing.assert_array_equal(got, want)


def test_mode_examples(sim):
    x = np.array([2.5, -2.5, 3.5, -0.5, 0.3, -1.7, 4.0], dtype=np.float32)
    want = {
        "none": [2, -2, 3, 0, 0, -1, 4],
        "rint": [2, -2, 4, 0, 0, -2, 4],
        "round": [3, -3, 4, -1, 0, -2, 4],
        "floor": [2, -3, 3, -1, 0, -2, 4],
        "ceil": [3, -2, 4, 0, 1, -1, 4],
        "trunc": [2, -2, 3, 0, 0, -1, 4],
        "odd": [3, -3, 3, -1, 1, -1, 4],
    }
    for mode, expected in want.items():
        np.testing.assert_array_equal(convert(sim, DT.INT32, DT.FP32, x, mode), expected,
                                      err_msg=mode)
    # FP16 overflow per mode: 65519 rounds down, 65520 is the tie that overflows under Rint.
    y = np.array([65519, 65520, -65520, 70000, -70000], dtype=np.float32)
    want16 = {
        "rint": [65504, np.inf, -np.inf, np.inf, -np.inf],
        "round": [65504, np.inf, -np.inf, np.inf, -np.inf],
        "trunc": [65504, 65504, -65504, 65504, -65504],
        "floor": [65504, 65504, -np.inf, 65504, -np.inf],
        "ceil": [np.inf, np.inf, -65504, np.inf, -65504],
        "odd": [65504, 65504, -65504, 65504, -65504],
    }
    for mode, expected in want16.items():
        got = decode(DT.FP16, convert(sim, DT.FP16, DT.FP32, y, mode))
        np.testing.assert_array_equal(got, expected, err_msg=mode)


# -- 5: INT64 -> FP32 is one rounding -------------------------------------------------------


def test_int64_to_fp32_single_rounding(sim):
    x = 2**60 + 2**36 + 1  # just above an FP32 tie; via double the +1 is lost and the tie goes even
    assert np.float32(np.float64(x)) == np.float32(2.0**60)
    got = convert(sim, DT.FP32, DT.INT64, np.array([x, -x, 2**53 + 1, 2**63 - 1, -(2**63)]))
    np.testing.assert_array_equal(got, np.array([2**60 + 2**37, -(2**60 + 2**37), 2**53, 2**63,
                                                 -(2**63)]))
    rng = np.random.default_rng(8)
    vals = np.concatenate(
        [
            rng.integers(-(2**63), 2**63 - 1, 3000, dtype=np.int64),
            rng.integers(-(2**40), 2**40, 1000, dtype=np.int64),
            np.array([2**24 + 1, 2**25 + 2, 2**25 + 3, -(2**25) - 6, 2**62 + 2**38],
                     dtype=np.int64),
        ]
    )
    for mode in MODES:
        want = np.array([ref_int_round(int(v), 24, mode) for v in vals], dtype=np.float32)
        got = convert(sim, DT.FP32, DT.INT64, vals, mode)
        np.testing.assert_array_equal(bits_u32(got), bits_u32(want), err_msg=mode)


# -- integer and bool destinations; every pair ----------------------------------------------

INT_TYPES = [DT.INT8, DT.INT16, DT.INT32, DT.INT64, DT.UINT8, DT.UINT16, DT.UINT32]


def test_int_to_int_saturates(sim):
    vals = np.array([0, 1, -1, 127, 128, -129, 255, 256, 32767, -32769, 65536, 2**31, -(2**31) - 1,
                     2**32, 2**62, -(2**63), 2**63 - 1], dtype=np.int64)
    for dst in INT_TYPES:
        info = np.iinfo(STORAGE[dst])
        want = np.array([min(max(int(v), info.min), info.max) for v in vals], dtype=STORAGE[dst])
        np.testing.assert_array_equal(convert(sim, dst, DT.INT64, vals), want, err_msg=str(dst))
    big = np.array([2**32 - 1, 2**31], dtype=np.uint32)
    np.testing.assert_array_equal(convert(sim, DT.INT32, DT.UINT32, big), [2**31 - 1, 2**31 - 1])
    np.testing.assert_array_equal(convert(sim, DT.INT64, DT.UINT32, big), [2**32 - 1, 2**31])


def test_every_pair_converts_small_values(sim):
    """Values every format holds exactly survive every one-hop conversion."""
    for src in STORAGE:
        for dst in STORAGE:
            vals = [0, 1] if DT.BOOL in (src, dst) else [0, 1, 2, 3, 6, 12]
            if src.is_signed and dst.is_signed and DT.BOOL not in (src, dst):
                vals += [-1, -3, -12]
            src_vals = np.array(vals, dtype=np.float64)
            if src in NARROW_FLOATS:
                stored = torch_bits(src_vals.astype(np.float32), src.to_torch())
            else:
                stored = src_vals.astype(STORAGE[src])
            got = decode(dst, convert(sim, dst, src, stored, "none"))
            np.testing.assert_array_equal(got, src_vals, err_msg=f"{src} -> {dst}")


def test_inline_fp16_path_equals_the_generic_conversion_on_every_half_and_rounding_boundary(sim):
    # Every half; floats: every sign/exponent/top-10-mantissa pattern with the 13 bits the
    # rounding drops set to each case that decides it (exact, just below/at/above the tie,
    # largest), which covers each rounding boundary of every binade, plus NaN payloads.
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    tops = np.arange(1 << 19, dtype=np.uint32) << 13
    lows = np.array([0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF], dtype=np.uint32)
    floats = f32((tops[:, None] | lows[None, :]).ravel())
    widen = np.empty(halves.size, dtype=np.float32)
    rounded = np.empty(floats.size, dtype=np.uint16)
    sim.sim_f16_inline(ptr(halves), ptr(widen), halves.size, ptr(floats), ptr(rounded),
                       floats.size)
    assert np.array_equal(widen.view(np.uint32),
                          convert(sim, DT.FP32, DT.FP16, halves).view(np.uint32))
    assert np.array_equal(rounded, convert(sim, DT.FP16, DT.FP32, floats))
