"""Tile instructions of the simulator (pypto/sim/include/pto/isa.hpp) against torch/numpy."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
import torch

from pypto.ir.dtypes import DataType as DT
from pypto.sim import INCLUDE_DIR

BINARY = {"add": 0, "sub": 1, "mul": 2, "div": 3, "max": 4, "min": 5}
UNARY = {"exp": 0, "log": 1, "sqrt": 2, "rsqrt": 3, "recip": 4, "neg": 5, "abs": 6, "relu": 7}
SCALAR = {"adds": 0, "subs": 1, "muls": 2, "divs": 3, "maxs": 4, "mins": 5, "rsubs": 6, "rdivs": 7,
          "rmaxs": 8, "rmins": 9}
PAD = {"zero": 0, "max": 1, "min": 2}
ROWS, COLS = 64, 256

TORCH_BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "max": torch.maximum,
    "min": torch.minimum,
}
TORCH_UNARY = {
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "recip": torch.reciprocal,
    "neg": torch.neg,
    "abs": torch.abs,
    "relu": torch.relu,
}


def ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def half_bits(t: torch.Tensor) -> np.ndarray:
    """A float16/bfloat16 tensor's bit patterns as a uint16 array."""
    return t.contiguous().view(torch.int16).numpy().view(np.uint16).copy()


def from_bits(bits: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    return torch.from_numpy(bits.view(np.int16)).view(dtype)


def random_half(rng, dtype: torch.dtype, n: int = ROWS * COLS, spread: int = 8) -> np.ndarray:
    """Bits of random values over 2*spread binades, both signs, with exact zeros mixed in."""
    x = rng.standard_normal(n) * np.exp2(rng.integers(-spread, spread, n))
    x[rng.random(n) < 0.01] = 0.0
    return half_bits(torch.from_numpy(x).to(dtype))


def ordered(bits: np.ndarray) -> np.ndarray:
    """Maps FP16 bit patterns to integers whose difference counts ulps across zero."""
    b = bits.astype(np.int32)
    return np.where(b & 0x8000, 0x8000 - b, b)


def assert_bits_equal(got: np.ndarray, want: np.ndarray, dtype: torch.dtype, ulps: int = 0) -> None:
    """Equal bit patterns (within `ulps`), NaN matching any NaN."""
    got_nan = torch.isnan(from_bits(got, dtype)).numpy()
    want_nan = torch.isnan(from_bits(want, dtype)).numpy()
    np.testing.assert_array_equal(got_nan, want_nan)
    diff = np.abs(ordered(got[~got_nan]) - ordered(want[~want_nan]))
    off = np.count_nonzero(diff > ulps)
    assert diff.max(initial=0) <= ulps, f"{off} elements off by > {ulps} ulp"


def binary(sim, dtype: DT, op: str, a, b, out=None, rows=ROWS, cols=COLS, vrows=None, vcols=None):
    out = np.zeros_like(a) if out is None else out
    vrows, vcols = vrows or rows, vcols or cols
    assert sim.sim_binary(dtype.code, BINARY[op], ptr(out), ptr(a), ptr(b), rows, cols, vrows,
                          vcols) == 0
    return out


def unary(sim, dtype: DT, op: str, a):
    out = np.zeros_like(a)
    assert sim.sim_unary(dtype.code, UNARY[op], ptr(out), ptr(a), ROWS, COLS) == 0
    return out


def scalar(sim, dtype: DT, op: str, a, s: float):
    out = np.zeros_like(a)
    assert sim.sim_scalar(dtype.code, SCALAR[op], ptr(out), ptr(a), s, ROWS, COLS) == 0
    return out


# -- 6: FP16 / BF16 arithmetic --------------------------------------------------------------


@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("dtype", [DT.FP16, DT.BF16])
def test_half_binary_matches_torch(sim, dtype, op):
    """Widen, compute in float, round once: torch's CPU half ops do the same, bit for bit."""
    rng = np.random.default_rng(10)
    a, b = random_half(rng, dtype.to_torch()), random_half(rng, dtype.to_torch())
    got = binary(sim, dtype, op, a, b)
    want = half_bits(TORCH_BINARY[op](from_bits(a, dtype.to_torch()), from_bits(b,
                                                                                dtype.to_torch())))
    assert_bits_equal(got, want, dtype.to_torch())


def test_fp16_overflow_and_nan_propagation(sim):
    a = half_bits(torch.tensor([60000.0, -60000.0, 1.0, float("nan"), 2.0,
                                0.0] * (ROWS * COLS // 6 + 1)))
    a = a[: ROWS * COLS].copy()
    b = np.roll(a, 1)
    for op in ("add", "mul", "div", "max", "min"):
        got = binary(sim, DT.FP16, op, a, b)
        ta, tb = from_bits(a, torch.float16), from_bits(b, torch.float16)
        assert_bits_equal(got, half_bits(TORCH_BINARY[op](ta, tb)), torch.float16)


@pytest.mark.parametrize("op", list(UNARY))
def test_fp16_unary_matches_torch(sim, op):
    """sqrt/recip/neg/abs/relu are bit-exact; exp/log/rsqrt go through libm in float and may
    land 1 FP16 ulp from torch's vectorized float kernels when the float result sits at an
    FP16 rounding boundary."""
    rng = np.random.default_rng(11)
    x = random_half(rng, torch.float16, spread=4)
    if op in ("log", "sqrt", "rsqrt"):
        x &= 0x7FFF  # non-negative inputs, zeros included
    got = unary(sim, DT.FP16, op, x)
    want = half_bits(TORCH_UNARY[op](from_bits(x, torch.float16)))
    ulps = 1 if op in ("exp", "log", "rsqrt") else 0
    assert_bits_equal(got, want, torch.float16, ulps)
    if ulps:  # the 1-ulp cases are rare boundary cases, not a systematic bias
        assert np.count_nonzero(got != want) < 0.001 * x.size


def test_fp32_ops_match_numpy(sim):
    rng = np.random.default_rng(12)
    a = rng.standard_normal(ROWS * COLS).astype(np.float32)
    b = rng.standard_normal(ROWS * COLS).astype(np.float32)
    with np.errstate(all="ignore"):
        for op, ref in {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}.items():
            np.testing.assert_array_equal(binary(sim, DT.FP32, op, a, b), ref, err_msg=op)
        np.testing.assert_array_equal(unary(sim, DT.FP32, "sqrt", a), np.sqrt(a))
        np.testing.assert_array_equal(unary(sim, DT.FP32, "recip", a), np.float32(1) / a)
        np.testing.assert_array_equal(unary(sim, DT.FP32, "relu", a), np.maximum(a, 0))
        np.testing.assert_allclose(unary(sim, DT.FP32, "exp", a), np.exp(a.astype(np.float64)),
                                   rtol=3e-7)


@pytest.mark.parametrize("op", list(SCALAR))
def test_fp16_scalar_forms_round_the_scalar_first(sim, op):
    rng = np.random.default_rng(13)
    x = random_half(rng, torch.float16, spread=4)
    s = 0.3  # not an FP16 value: the hardware first rounds it (up) to FP16 0.300048828125
    got = scalar(sim, DT.FP16, op, x, s)
    ta, ts = from_bits(x, torch.float16), torch.tensor(s, dtype=torch.float16)
    ref = {
        "adds": ta + ts,
        "subs": ta - ts,
        "muls": ta * ts,
        "divs": ta / ts,
        "maxs": torch.maximum(ta, ts),
        "mins": torch.minimum(ta, ts),
        "rsubs": ts - ta,
        "rdivs": ts / ta,
        "rmaxs": torch.maximum(ts, ta),
        "rmins": torch.minimum(ts, ta),
    }[op]
    assert_bits_equal(got, half_bits(ref), torch.float16)


def test_integer_arithmetic_wraps(sim):
    rng = np.random.default_rng(14)
    a = rng.integers(-(2**31), 2**31, ROWS * COLS).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, ROWS * COLS).astype(np.int32)
    b[:100] = 0
    a[100], b[100] = -(2**31), -1
    for op, ref in {"add": a + b, "sub": a - b, "mul": a * b}.items():
        np.testing.assert_array_equal(binary(sim, DT.INT32, op, a, b), ref, err_msg=op)
    quotient = np.fix(a.astype(np.float64) / np.where(b == 0, 1, b)).astype(np.int64)
    quotient = np.where(b == 0, 0, quotient).astype(np.int32)  # wraps -2**31 / -1 to -2**31
    np.testing.assert_array_equal(binary(sim, DT.INT32, "div", a, b), quotient)
    np.testing.assert_array_equal(binary(sim, DT.INT32, "max", a, b), np.maximum(a, b))
    i8 = np.resize(np.array([-128, -1, 0, 5, 127], dtype=np.int8), ROWS * COLS)
    np.testing.assert_array_equal(unary(sim, DT.INT8, "neg", i8)[:5], [-128, 1, 0, -5, -127])
    np.testing.assert_array_equal(unary(sim, DT.INT8, "abs", i8)[:5], [-128, 1, 0, 5, 127])
    np.testing.assert_array_equal(unary(sim, DT.INT8, "relu", i8)[:5], [0, 0, 0, 5, 127])
    u8 = np.resize(np.array([0, 1, 200], dtype=np.uint8), ROWS * COLS)
    np.testing.assert_array_equal(scalar(sim, DT.UINT8, "subs", u8, 2)[:3], [254, 255, 198])
    np.testing.assert_array_equal(scalar(sim, DT.UINT8, "rdivs", u8, 7)[:3], [0, 7, 0])
    np.testing.assert_array_equal(scalar(sim, DT.INT32, "adds", a, 2.5)[:3], a[:3] + 2)
    assert sim.sim_unary(DT.INT32.code, UNARY["exp"], ptr(a), ptr(a), ROWS, COLS) == -1


def test_math_on_integer_tiles_does_not_compile(tmp_path):
    src = tmp_path / "bad.cpp"
    src.write_text(
        '#include "pto/isa.hpp"\n'
        "void f(pto::Tile<int32_t> t) { pto::texp(t, t); }\n"
    )
    cmd = ["g++", "-std=c++17", "-fsyntax-only", f"-I{INCLUDE_DIR}", str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode != 0 and "for float tiles only" in proc.stderr


# -- 7: movement, valid regions, in-place ---------------------------------------------------


def tensor_args(a: np.ndarray):
    """(ndim, shape, strides in elements) of a numpy view, as int64 arrays for ctypes."""
    shape = np.array(a.shape, dtype=np.int64)
    stride = np.array([s // a.itemsize for s in a.strides], dtype=np.int64)
    return a.ndim, shape, stride


def tload(sim, dtype: DT, src: np.ndarray, r0, c0, rows, cols, vrows, vcols, pad, addr=64):
    """Loads into a tile at byte `addr` of a sentinel-filled buffer; returns (tile, buffer)."""
    vec = np.full(addr + rows * cols * src.itemsize + 64, 0xEE, dtype=np.uint8)
    ndim, shape, stride = tensor_args(src)
    rc = sim.sim_tload(dtype.code, src.ctypes.data, ndim, ptr(shape), ptr(stride), r0, c0,
                       ptr(vec), addr,
                       rows, cols, vrows, vcols, PAD[pad])
    assert rc == 0
    tile = vec[addr : addr + rows * cols * src.itemsize].view(src.dtype).reshape(rows, cols)
    return tile, vec


@pytest.mark.parametrize(
    "dtype, np_dtype, pads",
    [
        (DT.FP32, np.float32, {"zero": 0.0, "max": np.inf, "min": -np.inf}),
        (DT.FP16, np.uint16, {"zero": 0, "max": 0x7C00, "min": 0xFC00}),
        (DT.INT32, np.int32, {"zero": 0, "max": 2**31 - 1, "min": -(2**31)}),
        (DT.UINT8, np.uint8, {"zero": 0, "max": 255, "min": 0}),
    ],
)
@pytest.mark.parametrize("pad", list(PAD))
def test_tload_window_valid_region_and_pad(sim, dtype, np_dtype, pads, pad):
    base = np.arange(12 * 40).reshape(12, 40).astype(np_dtype)
    src = base[:, ::2]  # column stride 2 elements, row stride 40
    tile, vec = tload(sim, dtype, src, 2, 3, rows=4, cols=8, vrows=3, vcols=5, pad=pad)
    want = np.full((4, 8), pads[pad], dtype=np_dtype)
    want[:3, :5] = src[2:5, 3:8]
    np.testing.assert_array_equal(tile, want)
    assert np.all(vec[:64] == 0xEE) and np.all(vec[64 + tile.nbytes :] == 0xEE)


def test_tload_rank1(sim):
    src = np.arange(100, dtype=np.float32)[::3]
    tile, _ = tload(sim, DT.FP32, src, 0, 5, rows=1, cols=8, vrows=1, vcols=6, pad="min")
    np.testing.assert_array_equal(tile[0], list(src[5:11]) + [-np.inf] * 2)


def test_pad_values_of_every_type(sim):
    want = {
        DT.BOOL: (0, 1, 0),
        DT.INT8: (0, 127, -128),
        DT.INT64: (0, 2**63 - 1, -(2**63)),
        DT.UINT16: (0, 65535, 0),
        DT.UINT32: (0, 2**32 - 1, 0),
        DT.FP16: (0, 0x7C00, 0xFC00),
        DT.BF16: (0, 0x7F80, 0xFF80),
        DT.FP32: (0, 0x7F800000, 0xFF800000),
        DT.FP8E4M3FN: (0, 0x7E, 0xFE),  # no infinity: +-448
        DT.FP8E5M2: (0, 0x7C, 0xFC),
    }
    for dtype, values in want.items():
        for kind, value in zip(PAD, values, strict=True):
            out = np.zeros(8, dtype=np.uint8)
            assert sim.sim_pad(dtype.code, PAD[kind], ptr(out)) == 0
            assert int.from_bytes(out[: dtype.itemsize].tobytes(), "little",
                                  signed=value < 0) == value


def test_tstore_writes_only_the_valid_region(sim):
    tile = np.arange(4 * 8, dtype=np.float32).reshape(4, 8)
    vec = np.zeros(32 + tile.nbytes, dtype=np.uint8)
    vec[32:] = tile.view(np.uint8).ravel()
    dst = np.full((6, 20), -1.0, dtype=np.float32)
    view = dst[:, 1::2]  # strided destination window
    ndim, shape, stride = tensor_args(view)
    rc = sim.sim_tstore(DT.FP32.code, view.ctypes.data, ndim, ptr(shape), ptr(stride), 1, 2,
                        ptr(vec), 32,
                        4, 8, 3, 5)
    assert rc == 0
    want = np.full((6, 20), -1.0, dtype=np.float32)
    want[:, 1::2][1:4, 2:7] = tile[:3, :5]
    np.testing.assert_array_equal(dst, want)


def test_binary_computes_the_padding_too_and_may_run_in_place(sim):
    rng = np.random.default_rng(15)
    a, b = random_half(rng, torch.float16), random_half(rng, torch.float16)
    ta, tb = from_bits(a, torch.float16), from_bits(b, torch.float16)
    x = a.copy()
    binary(sim, DT.FP16, "add", x, b, out=x, vrows=50, vcols=200)  # dst == a, partial region
    np.testing.assert_array_equal(x, half_bits(ta + tb))
    y = b.copy()
    binary(sim, DT.FP16, "add", a, y, out=y)  # dst == b
    np.testing.assert_array_equal(y, half_bits(ta + tb).ravel())


def test_tcvt_and_texpands_write_the_whole_tile(sim):
    src = np.linspace(-70000, 70000, 4 * 6, dtype=np.float32).reshape(4, 6)
    dst = np.full((4, 6), 0xABCD, dtype=np.uint16)
    trunc = 5
    sim.sim_tcvt_f32_f16(ptr(dst), 6, ptr(src), 6, 4, 3, 5, trunc)
    converted = np.empty(src.shape, dtype=np.uint16)
    assert sim.sim_convert(DT.FP16.code, DT.FP32.code, ptr(src), ptr(converted), src.size,
                           trunc) == 0
    np.testing.assert_array_equal(dst, converted)
    assert converted[0, 0] == 0xFBFF  # -70000 truncates to -65504, not -inf
    fill = np.zeros((4, 6), dtype=np.float32)
    sim.sim_texpands_f32(ptr(fill), 4, 6, 2, 3, np.float32(2.5))
    np.testing.assert_array_equal(fill, np.full((4, 6), 2.5, dtype=np.float32))


@pytest.mark.parametrize("pad, value", [("zero", 0.0), ("max", np.inf), ("min", -np.inf)])
def test_tfillpad_replaces_everything_outside_the_valid_region(sim, pad, value):
    src = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    out = np.full_like(src, 7.0)
    sim.sim_tfillpad_f32(ptr(out), ptr(src), 4, 6, 3, 4, PAD[pad])
    want = np.full_like(src, value)
    want[:3, :4] = src[:3, :4]
    np.testing.assert_array_equal(out, want)
    sim.sim_tfillpad_f32(ptr(src), ptr(src), 4, 6, 3, 4, PAD[pad])  # in place
    np.testing.assert_array_equal(src, want)
