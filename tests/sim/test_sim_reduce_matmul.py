"""Reduction and matmul instructions of the simulator follow their documented orders."""

from __future__ import annotations

import numpy as np
import pytest

from pypto.ir.dtypes import DataType as DT

ROW_SUM, ROW_MAX, ROW_MIN, COL_SUM, COL_SUM_TREE, COL_MAX, COL_MIN = range(7)
F16_TO_F32, BF16_TO_F32, F32_TO_F32, F16_TO_F16, I8_TO_I32 = range(5)


def ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def reduce(sim, dtype: DT, op: int, x: np.ndarray) -> np.ndarray:
    rows, cols = x.shape
    out = np.zeros(rows if op <= ROW_MIN else cols, dtype=x.dtype)
    tmp = np.zeros_like(x)
    assert sim.sim_reduce(dtype.code, op, ptr(out), ptr(x), ptr(tmp), rows, cols) == 0
    return out


def sequential(values: np.ndarray, dtype) -> np.ndarray:
    """Left-to-right sums along axis 0, every step rounded to dtype."""
    acc = values[0].astype(dtype)
    for v in values[1:]:
        acc = (acc + v).astype(dtype)
    return acc


def tree(values: np.ndarray, dtype) -> np.ndarray:
    """The documented tree, the device's (pto-isa npu/a2a3/TColSum.hpp): adjacent rows in
    pairs, an odd last row added to the first pair's sum, level by level."""
    rows = [v.astype(dtype) for v in values]
    while len(rows) > 1:
        pairs = [(rows[2 * i] + rows[2 * i + 1]).astype(dtype) for i in range(len(rows) // 2)]
        if len(rows) % 2:
            pairs[0] = (pairs[0] + rows[-1]).astype(dtype)
        rows = pairs
    return rows[0]


def test_row_sum_of_fp16_accumulates_in_fp16_left_to_right(sim):
    x = np.random.default_rng(3).random((4, 8192)).astype(np.float16)
    got = reduce(sim, DT.FP16, ROW_SUM, x)
    np.testing.assert_array_equal(got, sequential(x.T, np.float16))
    assert np.all(got < x.astype(np.float64).sum(axis=1) * 0.75)  # FP16 stagnation


@pytest.mark.parametrize("op, fn", [(ROW_MAX, np.max), (ROW_MIN, np.min)])
def test_row_max_and_min(sim, op, fn):
    x = np.random.default_rng(4).standard_normal((8, 33)).astype(np.float32)
    np.testing.assert_array_equal(reduce(sim, DT.FP32, op, x), fn(x, axis=1))


def test_col_sum_sequential_and_tree_orders(sim):
    x = np.random.default_rng(5).standard_normal((37, 16)).astype(np.float32) * 1e3
    seq = reduce(sim, DT.FP32, COL_SUM, x.copy())
    tr = reduce(sim, DT.FP32, COL_SUM_TREE, x.copy())
    np.testing.assert_array_equal(seq, sequential(x, np.float32))
    np.testing.assert_array_equal(tr, tree(x, np.float32))
    assert not np.array_equal(seq, tr)


@pytest.mark.parametrize("op, fn", [(COL_MAX, np.max), (COL_MIN, np.min)])
def test_col_max_and_min(sim, op, fn):
    x = np.random.default_rng(6).integers(-100, 100, (9, 12)).astype(np.int32)
    np.testing.assert_array_equal(reduce(sim, DT.INT32, op, x), fn(x, axis=0))


def f32_matmul_in_k_order(a, b, acc=None):
    m, n = a.shape[0], b.shape[1]
    out = np.zeros((m, n), dtype=np.float32) if acc is None else acc.astype(np.float32).copy()
    for k in range(a.shape[1]):
        out = (out + a[:, k:k + 1].astype(np.float32) * b[k:k + 1, :].astype(np.float32)).astype(
            np.float32)
    return out


@pytest.mark.parametrize("ta, tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_fp16_matmul_accumulates_in_fp32_in_k_order(sim, ta, tb):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((16, 40)).astype(np.float16)
    b = rng.standard_normal((40, 24)).astype(np.float16)
    a_in = np.ascontiguousarray(a.T) if ta else a
    b_in = np.ascontiguousarray(b.T) if tb else b
    c = np.zeros((16, 24), dtype=np.float32)
    assert sim.sim_matmul(F16_TO_F32, ptr(c), None, ptr(a_in), ptr(b_in), 16, 24, 40, ta, tb) == 0
    np.testing.assert_array_equal(c, f32_matmul_in_k_order(a, b))


def test_matmul_acc_continues_the_same_sum(sim):
    rng = np.random.default_rng(8)
    a = rng.standard_normal((8, 64)).astype(np.float16)
    b = rng.standard_normal((64, 8)).astype(np.float16)
    c = np.zeros((8, 8), dtype=np.float32)
    sim.sim_matmul(F16_TO_F32, ptr(c), None, ptr(np.ascontiguousarray(a[:, :32])),
                   ptr(np.ascontiguousarray(b[:32])), 8, 8, 32, 0, 0)
    sim.sim_matmul(F16_TO_F32, ptr(c), ptr(c), ptr(np.ascontiguousarray(a[:, 32:])),
                   ptr(np.ascontiguousarray(b[32:])), 8, 8, 32, 0, 0)
    np.testing.assert_array_equal(c, f32_matmul_in_k_order(a, b))


def test_fp16_result_is_rounded_once_from_the_fp32_sum(sim):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((8, 128)).astype(np.float16)
    b = rng.standard_normal((128, 8)).astype(np.float16)
    c = np.zeros((8, 8), dtype=np.float16)
    sim.sim_matmul(F16_TO_F16, ptr(c), None, ptr(a), ptr(b), 8, 8, 128, 0, 0)
    np.testing.assert_array_equal(c, f32_matmul_in_k_order(a, b).astype(np.float16))


def test_int8_matmul_accumulates_in_int32(sim):
    rng = np.random.default_rng(10)
    a = rng.integers(-128, 128, (4, 300)).astype(np.int8)
    b = rng.integers(-128, 128, (300, 5)).astype(np.int8)
    c = np.zeros((4, 5), dtype=np.int32)
    sim.sim_matmul(I8_TO_I32, ptr(c), None, ptr(a), ptr(b), 4, 5, 300, 0, 0)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
