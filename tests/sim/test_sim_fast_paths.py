"""The simulator's fast paths compute exactly what its definitions do, bit for bit.

The vectorised FP16/BF16 conversions equal `convert<>`; element-wise instructions (narrow
tiles widened and rounded a block at a time, FP32 and integer tiles a vector chunk at a
time, AVX2 or portable) equal `elem<>` applied element by element; the register-tiled
matmul of every vector width equals the K-order model; row reductions done several rows
at a time keep each row's sequential order.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pypto.ir.dtypes import DataType as DT

F16_TO_F32, BF16_TO_F32, F32_TO_F32, F16_TO_F16 = range(4)
BINARY = {"add": 0, "sub": 1, "mul": 2, "div": 3, "max": 4, "min": 5}
SCALAR = {"adds": 0, "subs": 1, "muls": 2, "divs": 3, "maxs": 4, "mins": 5, "rsubs": 6, "rdivs": 7,
          "rmaxs": 8, "rmins": 9}
# sim_elementwise_reference's code of each scalar form.
SCALAR_REFERENCE = {name: 8 + code for name, code in SCALAR.items() if code < 8} | {
    "rmaxs": 24, "rmins": 25}
UNARY = {"exp": 0, "log": 1, "sqrt": 2, "rsqrt": 3, "recip": 4, "neg": 5, "abs": 6, "relu": 7}
EXPAND = {"row_expand": 0, "row_expand_add": 1, "row_expand_mul": 2, "col_expand": 4,
          "col_expand_sub": 5, "col_expand_div": 6}
# The element-wise op each broadcast applies (sim_elementwise_reference codes); row_expand
# and col_expand take the vector's value, which `max(v, v)` rounds the same way.
EXPAND_AS_ELEMENTWISE = {"row_expand_add": 0, "row_expand_mul": 2, "col_expand_sub": 1,
                         "col_expand_div": 3}
FP32_NAN = 0x7FC00000
# Shapes that are no multiple of the vector widths, blocks or row groups (tails everywhere).
ROWS, COLS = 19, 301


def ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def every_pattern_and_some_more(bits: int) -> np.ndarray:
    """Every 16-bit pattern plus three, so array lengths leave a tail after whole vectors."""
    extra = np.array([0x7C01, 0x8000, 0x0001], dtype=np.uint32)
    return np.concatenate([np.arange(1 << bits, dtype=np.uint32), extra]).astype(np.uint16)


def rounding_boundaries(dropped: int) -> np.ndarray:
    """Every float whose low `dropped` bits take each value that decides a rounding (zero,
    just above zero, just below / at / just above the tie, all ones), plus NaN payloads."""
    tops = np.arange(1 << (32 - dropped), dtype=np.uint64) << dropped
    half = 1 << (dropped - 1)
    lows = np.array([0, 1, half - 1, half, half + 1, (1 << dropped) - 1], dtype=np.uint64)
    bits = (tops[:, None] | lows[None, :]).ravel()
    extra = np.array([0x7F800001, 0xFFC00001, 0x477FF000], dtype=np.uint64)  # odd length
    return np.concatenate([bits, extra]).astype(np.uint32).view(np.float32)


def generic(sim, dst: DT, src: DT, x: np.ndarray, out_dtype) -> np.ndarray:
    out = np.empty(x.size, dtype=out_dtype)
    assert sim.sim_convert(dst.code, src.code, ptr(x), ptr(out), x.size, 1) == 0
    return out


@pytest.mark.parametrize("dtype, dropped, f16c", [(DT.FP16, 13, 1), (DT.FP16, 13, 0),
                                                  (DT.BF16, 16, 0)])
def test_fast_conversions_equal_the_generic_one_on_every_half_and_rounding_boundary(
        sim, dtype, dropped, f16c):
    """f16c=1 takes the F16C instructions where the CPU has them, 0 the portable loop."""
    halves = every_pattern_and_some_more(16)
    floats = rounding_boundaries(dropped)
    widen_s, widen_v = np.empty(halves.size, np.float32), np.empty(halves.size, np.float32)
    round_s, round_v = np.empty(floats.size, np.uint16), np.empty(floats.size, np.uint16)
    assert sim.sim_fast_narrow(dtype.code, f16c, ptr(halves), ptr(widen_s), ptr(widen_v),
                               halves.size, ptr(floats), ptr(round_s), ptr(round_v),
                               floats.size) == 0
    want_widen = generic(sim, DT.FP32, dtype, halves, np.float32).view(np.uint32)
    want_round = generic(sim, dtype, DT.FP32, floats, np.uint16)
    np.testing.assert_array_equal(widen_s.view(np.uint32), want_widen)
    np.testing.assert_array_equal(widen_v.view(np.uint32), want_widen)
    np.testing.assert_array_equal(round_s, want_round)
    np.testing.assert_array_equal(round_v, want_round)


BITS = {DT.FP16: np.uint16, DT.BF16: np.uint16, DT.FP32: np.uint32, DT.INT8: np.uint8,
        DT.INT32: np.uint32, DT.INT64: np.uint64, DT.UINT8: np.uint8}


def random_bits(rng, n: int, dtype: DT = DT.FP16) -> np.ndarray:
    """Arbitrary bit patterns of `dtype`'s width: for floats NaN payloads, infinities,
    subnormals and zeros included."""
    width = BITS[dtype]
    return rng.integers(0, np.iinfo(width).max, n, dtype=width, endpoint=True)


def reference(sim, dtype: DT, op: int, a, b=None, s: float = 0.0) -> np.ndarray:
    out = np.zeros_like(a)
    b = a if b is None else b
    assert sim.sim_elementwise_reference(dtype.code, op, ptr(out), ptr(a), ptr(b), s, a.size) == 0
    return out


@pytest.mark.parametrize("dtype", [DT.FP16, DT.BF16, DT.FP32, DT.INT8, DT.INT32, DT.INT64,
                                   DT.UINT8])
def test_elementwise_instructions_equal_elem_applied_element_by_element(sim, dtype):
    """Narrow floats go a block at a time through float, FP32 and integers a vector chunk at a
    time (AVX2 for floats where the CPU has it): every path equals elem<> bit for bit."""
    rng = np.random.default_rng(20)
    a, b = random_bits(rng, ROWS * COLS, dtype), random_bits(rng, ROWS * COLS, dtype)
    for op, code in BINARY.items():
        out = np.zeros_like(a)
        assert sim.sim_binary(dtype.code, code, ptr(out), ptr(a), ptr(b), ROWS, COLS, ROWS,
                              COLS) == 0
        np.testing.assert_array_equal(out, reference(sim, dtype, code, a, b), err_msg=op)
    for s in (0.3, -7.0):
        for op, code in SCALAR.items():
            out = np.zeros_like(a)
            assert sim.sim_scalar(dtype.code, code, ptr(out), ptr(a), s, ROWS, COLS) == 0
            np.testing.assert_array_equal(out, reference(sim, dtype, SCALAR_REFERENCE[op], a, s=s),
                                          err_msg=op)
    for op, code in UNARY.items():
        if not dtype.is_float and op not in ("neg", "abs", "relu"):
            continue
        out = np.zeros_like(a)
        assert sim.sim_unary(dtype.code, code, ptr(out), ptr(a), ROWS, COLS) == 0
        np.testing.assert_array_equal(out, reference(sim, dtype, 16 + code, a), err_msg=op)


def test_portable_fp32_loops_equal_elem_and_work_in_place(sim):
    """The loops CPUs without AVX2 take: the same bits as elem<>, also with dst == a."""
    rng = np.random.default_rng(23)
    a, b = random_bits(rng, ROWS * COLS, DT.FP32), random_bits(rng, ROWS * COLS, DT.FP32)
    for op, code in BINARY.items():
        want = reference(sim, DT.FP32, code, a, b)
        out = np.zeros_like(a)
        assert sim.sim_binary_portable_fp32(code, ptr(out), ptr(a), ptr(b), a.size) == 0
        np.testing.assert_array_equal(out, want, err_msg=op)
        inplace = a.copy()
        assert sim.sim_binary_portable_fp32(code, ptr(inplace), ptr(inplace), ptr(b), a.size) == 0
        np.testing.assert_array_equal(inplace, want, err_msg=op)
    for op, code in UNARY.items():
        want = reference(sim, DT.FP32, 16 + code, a)
        inplace = a.copy()
        assert sim.sim_unary_portable_fp32(code, ptr(inplace), ptr(inplace), a.size) == 0
        np.testing.assert_array_equal(inplace, want, err_msg=op)


@pytest.mark.parametrize("dtype", [DT.FP16, DT.BF16, DT.FP32])
def test_in_place_instructions_read_each_chunk_before_writing_it(sim, dtype):
    rng = np.random.default_rng(21)
    a, b = random_bits(rng, ROWS * COLS, dtype), random_bits(rng, ROWS * COLS, dtype)
    want = reference(sim, dtype, BINARY["mul"], a, b)
    assert sim.sim_binary(dtype.code, BINARY["mul"], ptr(a), ptr(a), ptr(b), ROWS, COLS, ROWS,
                          COLS) == 0
    np.testing.assert_array_equal(a, want)


@pytest.mark.parametrize("dtype", [DT.FP16, DT.BF16])
@pytest.mark.parametrize("op", list(EXPAND))
def test_broadcasts_equal_the_elementwise_op_on_the_expanded_vector(sim, dtype, op):
    rng = np.random.default_rng(22)
    x = random_bits(rng, ROWS * COLS)
    row = op.startswith("row")
    v = random_bits(rng, ROWS if row else COLS)
    expanded = np.ascontiguousarray(np.broadcast_to(
        v[:, None] if row else v[None, :], (ROWS, COLS))).ravel()
    out = np.zeros_like(x)
    assert sim.sim_expand(dtype.code, EXPAND[op], ptr(out), ptr(x), ptr(v), ROWS, COLS) == 0
    if op in EXPAND_AS_ELEMENTWISE:
        want = reference(sim, dtype, EXPAND_AS_ELEMENTWISE[op], x, expanded)
    else:
        want = reference(sim, dtype, BINARY["max"], expanded, expanded)
    np.testing.assert_array_equal(out, want)


def k_order_model(a: np.ndarray, b: np.ndarray, acc: np.ndarray | None) -> np.ndarray:
    """s = s + a[i][k] * b[k][j] in float32 for k = 0, 1, ... (numpy: no FMA)."""
    out = np.zeros((a.shape[0], b.shape[1]), np.float32) if acc is None else acc.copy()
    with np.errstate(all="ignore"):
        for k in range(a.shape[1]):
            out = out + a[:, k:k + 1] * b[k:k + 1, :]
    return out


def with_specials(rng, x: np.ndarray) -> np.ndarray:
    """x with a few NaNs, infinities, huge values and signed zeros sprinkled in."""
    x = x.copy()
    flat = x.reshape(-1)
    for value in (np.nan, np.inf, -np.inf, 3e38, -0.0, 0.0):
        flat[rng.integers(0, flat.size, 3)] = value
    return x


@pytest.mark.parametrize("widest", [-1, 0, 1, 2])
@pytest.mark.parametrize("kind", [F16_TO_F32, BF16_TO_F32, F32_TO_F32, F16_TO_F16])
@pytest.mark.parametrize("ta, tb", [(0, 0), (1, 1)])
@pytest.mark.parametrize("with_acc", [False, True])
def test_every_matmul_kernel_width_equals_the_k_order_model(sim, widest, kind, ta, tb, with_acc):
    rng = np.random.default_rng(23 + kind)
    m, n, k = 13, 37, 70
    a32 = with_specials(rng, rng.standard_normal((m, k)).astype(np.float32))
    b32 = with_specials(rng, rng.standard_normal((k, n)).astype(np.float32))
    if kind in (F16_TO_F32, F16_TO_F16):
        with np.errstate(over="ignore"):  # with_specials' ±3e38 become ±inf in FP16: meant
            a_in, b_in = a32.astype(np.float16), b32.astype(np.float16)
        a32, b32 = a_in.astype(np.float32), b_in.astype(np.float32)
    elif kind == BF16_TO_F32:
        ta_, tb_ = torch.from_numpy(a32).bfloat16(), torch.from_numpy(b32).bfloat16()
        a_in, b_in = ta_.view(torch.int16).numpy(), tb_.view(torch.int16).numpy()
        a32, b32 = ta_.float().numpy(), tb_.float().numpy()
    else:
        a_in, b_in = a32, b32
    out_dtype = np.float16 if kind == F16_TO_F16 else np.float32
    acc = None
    if with_acc:
        acc = rng.standard_normal((m, n)).astype(out_dtype)
        acc[0, :] = -0.0  # -0 + (+0 products) is +0: the first step is a real add
    a_in = np.ascontiguousarray(a_in.T if ta else a_in)
    b_in = np.ascontiguousarray(b_in.T if tb else b_in)
    c = np.zeros((m, n), out_dtype)
    nr = sim.sim_matmul_kernel(widest, kind, ptr(c), None if acc is None else ptr(acc), ptr(a_in),
                               ptr(b_in), m, n, k, ta, tb)
    assert nr in {-1: (4,), 0: (8,), 1: (8, 16), 2: (8, 16, 32)}[widest]
    want = k_order_model(a32, b32, None if acc is None else acc.astype(np.float32))
    nan = np.isnan(want)
    if kind == F16_TO_F16:
        with np.errstate(all="ignore"):
            want_bits = want.astype(np.float16).view(np.uint16)
        got_bits, nan_bits = c.view(np.uint16), 0x7E00
    else:
        want_bits, got_bits, nan_bits = want.view(np.uint32), c.view(np.uint32), FP32_NAN
    assert nan.any() and not nan.all()
    np.testing.assert_array_equal(got_bits[~nan], want_bits[~nan])
    assert (got_bits[nan] == nan_bits).all()  # the canonical NaN


def reduce(sim, dtype: DT, op: int, x: np.ndarray) -> np.ndarray:
    rows, cols = x.shape
    out = np.zeros(rows if op <= 2 else cols, dtype=x.dtype)
    tmp = np.zeros_like(x)
    assert sim.sim_reduce(dtype.code, op, ptr(out), ptr(x), ptr(tmp), rows, cols) == 0
    return out


def test_row_sums_of_many_rows_each_accumulate_left_to_right(sim):
    x = np.random.default_rng(24).random((ROWS, COLS)).astype(np.float16)
    want = x[:, 0].copy()
    for c in range(1, COLS):
        want = (want + x[:, c]).astype(np.float16)
    np.testing.assert_array_equal(reduce(sim, DT.FP16, 0, x), want)


def test_row_max_of_many_rows_keeps_the_sequential_choice_between_signed_zeros(sim):
    x = np.zeros((ROWS, COLS), np.float32)
    x[::2, ::3] = -0.0
    x[3, 7] = np.nan
    got = reduce(sim, DT.FP32, 1, x).view(np.uint32)
    want = []
    for row in x:
        acc = row[0]
        for v in row[1:]:
            acc = acc if acc != acc else v if v != v else acc if acc > v else v
        want.append(np.float32(acc))
    want = np.array(want, np.float32).view(np.uint32)
    nan = np.isnan(got.view(np.float32))
    np.testing.assert_array_equal(nan, np.isnan(want.view(np.float32)))
    np.testing.assert_array_equal(got[~nan], want[~nan])


def test_fp16_column_sums_accumulate_row_by_row_in_fp16(sim):
    x = np.random.default_rng(25).standard_normal((ROWS, COLS)).astype(np.float16)
    want = x[0].copy()
    for r in range(1, ROWS):
        want = (want + x[r]).astype(np.float16)
    np.testing.assert_array_equal(reduce(sim, DT.FP16, 3, x.copy()), want)
