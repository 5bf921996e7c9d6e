"""Generators and references run in `portable_torch()`: torch calls whose bits differ
between machines are refused with their replacement named, `pypto.golden.portable`'s
replacements have specified results, every output is rounded once, and a golden made by
another generator version is reported as such."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import pypto.language as pl
from pypto.golden import Exact, GoldenCaseError, golden_drift, portable, record_golden
from pypto.golden.portable import NotPortableError, portable_torch, to_dtype
from pypto.ir.dtypes import DataType as DT
from pypto.spec import Kernel


@pl.jit
def double_it(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(x, 2.0)
    return out


def _case(reference=lambda x: x.double() * 2, inputs=lambda rng, v: {"x": rng.normal(v.x)},
          reason="doubling is exact"):
    spec = Kernel(double_it, variants={"v": {"x": ("fp32", [4, 8]), "out": ("fp32", [4, 8])}},
                  inputs=inputs, reference=reference, tolerance=Exact(reason))
    return spec.golden_case("v")


@pytest.mark.parametrize("call, replacement", [
    (lambda x: torch.exp(x), "pypto.golden.portable.exp"),
    (lambda x: x.exp(), "pypto.golden.portable.exp"),
    (lambda x: x @ x.T, "pypto.golden.portable.matmul"),
    (lambda x: x.sum(dim=1), "pypto.golden.portable.sum"),
    (lambda x: torch.maximum(x, -x), "pypto.golden.portable.maximum"),
    (lambda x: x.clamp(0, 1), "pypto.golden.portable.clamp"),
    (lambda x: x**3, "x * x * x"),
    (lambda x: torch.nn.functional.gelu(x), "exact arithmetic or pypto.golden.portable"),
])
def test_machine_dependent_calls_are_refused_naming_the_replacement(call, replacement):
    x = torch.randn(4, 4, dtype=torch.float64)
    with portable_torch(), pytest.raises(NotPortableError, match=replacement.replace("*", r"\*")):
        call(x)


def test_ieee_arithmetic_and_data_movement_pass():
    x = torch.arange(12, dtype=torch.float64).reshape(3, 4)
    with portable_torch():
        y = (x.double() * 2 + 1) / 3 - x.sqrt()
        y[1::2] = -(y[1::2].abs() + 0.25)
        z = torch.where(torch.isnan(y), 0.0, y).T.contiguous().view(-1)[:5].round()
        w = torch.nan_to_num(x.new_tensor([float("nan")]), nan=0.0).float().to(torch.float16)
    assert z.shape == (5,) and w.item() == 0.0


def test_a_refused_call_in_a_reference_names_the_spec():
    with pytest.raises(GoldenCaseError, match=r"test_golden_portable.py:\d+.*torch.Tensor.exp"):
        record_golden(_case(reference=lambda x: x.double().exp()), "unused")


def test_a_refused_call_in_an_input_generator_names_the_spec(tmp_path):
    def inputs(rng, v):
        return {"x": rng.normal(v.x).exp()}

    with pytest.raises(GoldenCaseError, match="input generator raised NotPortableError"):
        record_golden(_case(inputs=inputs), tmp_path)


def test_outputs_are_rounded_once_to_their_dtype():
    x = np.array([1 + 2.0**-11 + 2.0**-40, 1 + 2.0**-11, 2.0**-25, 2.0**-25 + 2.0**-60, 65520,
                  65519.99, -1e-300])
    half = to_dtype(x, DT.FP16).view(torch.int16).numpy().astype(np.uint16)
    assert half.tolist() == [0x3C01, 0x3C00, 0, 1, 0x7C00, 0x7BFF, 0x8000]
    bf = to_dtype(np.array([1 + 2.0**-8 + 2.0**-40, 1 + 2.0**-8]), DT.BF16)
    assert bf.view(torch.int16).tolist() == [0x3F81, 0x3F80]


def test_every_nan_becomes_the_canonical_quiet_nan():
    negative_nan = np.array([0xFFF8000000000001], dtype=np.uint64).view(np.float64)
    for dtype, bits in ((DT.FP32, 0x7FC00000), (DT.FP16, 0x7E00), (DT.BF16, 0x7FC0)):
        out = to_dtype(negative_nan, dtype)
        width = torch.int32 if dtype == DT.FP32 else torch.int16
        assert out.view(width).item() & ((1 << dtype.bits) - 1) == bits


def test_integer_outputs_must_be_integers_of_their_range():
    assert to_dtype(np.array([-128.0, 127.0]), DT.INT8).tolist() == [-128, 127]
    for bad in (1.5, 128.0, float("nan")):
        with pytest.raises(ValueError, match="is not a INT8 value"):
            to_dtype(np.array([bad]), DT.INT8)


def test_reductions_add_in_index_order():
    x = torch.tensor([[1.0, 2.0**53, -(2.0**53)], [2.0**53, -(2.0**53), 1.0]], dtype=torch.float64)
    assert portable.sum(x, dim=1).tolist() == [0.0, 1.0]  # (1 + 2^53) rounds to 2^53
    assert portable.mean(x, dim=1, keepdim=True).shape == (2, 1)
    assert portable.sum(torch.ones(2, 3, 4), dim=(0, 2)).tolist() == [8.0, 8.0, 8.0]


def test_maximum_and_minimum_order_signed_zeros_and_propagate_nan():
    a = torch.tensor([0.0, -0.0, float("nan"), 1.0])
    b = torch.tensor([-0.0, 0.0, 1.0, float("nan")])
    top, bottom = portable.maximum(a, b), portable.minimum(a, b)
    assert [math_signbit(v) for v in top[:2]] == [False, False]
    assert [math_signbit(v) for v in bottom[:2]] == [True, True]
    assert top[2:].isnan().all() and bottom[2:].isnan().all()
    assert portable.relu(torch.tensor([-0.0, -1.0, 2.0])).tolist() == [0.0, 0.0, 2.0]
    assert not math_signbit(portable.relu(torch.tensor([-0.0]))[0])
    assert portable.amax(torch.tensor([[-0.0, 0.0, -1.0]]), dim=1).tolist() == [0.0]


def math_signbit(value: torch.Tensor) -> bool:
    return bool(np.signbit(value.item()))


def test_matmul_sums_exact_products_in_k_order():
    a = torch.tensor([[2.0**53, 1.0, -(2.0**53)]], dtype=torch.float64)
    b = torch.ones(3, 1, dtype=torch.float64)
    assert portable.matmul(a, b).item() == 0.0  # 2^53 + 1 rounds to 2^53 first
    x, y = torch.randn(5, 7).half(), torch.randn(7, 3).half()
    assert torch.equal(portable.matmul(x, y), x.double() @ y.double())  # small: exact
    assert portable.matmul(torch.ones(3), torch.ones(3)).item() == 3.0


def test_softmax_rows_sum_to_one():
    p = portable.softmax(torch.randn(4, 50, dtype=torch.float64) * 10, dim=-1)
    assert torch.allclose(portable.sum(p, dim=-1), torch.ones(4, dtype=torch.float64))


def test_a_golden_of_this_generator_has_no_drift(tmp_path):
    case = _case()
    assert golden_drift(case, record_golden(case, tmp_path)) is None


def test_a_golden_of_another_generator_version_is_reported_as_such(tmp_path):
    case = _case()
    directory = record_golden(case, tmp_path)
    record = json.loads((directory / "golden.json").read_text())
    record["generator"] = "pypto.golden.SpecRNG/1 torch.Generator(mt19937)"
    (directory / "golden.json").write_text(json.dumps(record))
    drift = golden_drift(case, directory)
    assert drift.other_generator and "differs by design (not a mismatch)" in drift.describe()


def test_a_golden_whose_spec_changed_is_reported_as_a_difference(tmp_path):
    directory = record_golden(_case(), tmp_path)
    drift = golden_drift(_case(reason="doubling is exact in FP32"), directory)
    assert not drift.other_generator and drift.files == ("golden.json",)
    assert "differ from what its spec makes now" in drift.describe()
