"""GoldenToleranceTooTight judges a tolerance by what limits the comparison: the output's
dtype and the expected tensor's, not the inputs' (the reference reads the same values)."""

from __future__ import annotations

import warnings

import pytest
import torch

import pypto.language as pl
from pypto.comparison import GoldenToleranceWarning
from pypto.ir import DataType
from pypto.ir.diagnostics import comparison_dtype, tolerance_too_tight
from pypto.runtime import RunConfig, write_golden

FP16, FP32, BF16, INT32 = DataType.FP16, DataType.FP32, DataType.BF16, DataType.INT32
PLATFORM = "a2a3sim"
R, C = 16, 128


@pl.jit
def widen_and_double(x: pl.Tensor[[R, C], pl.FP16], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.cast(x, pl.FP32), 2.0)
    return out


@pl.jit
def double16(x: pl.Tensor[[R, C], pl.FP16], out: pl.Out[pl.Tensor[[R, C], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(x, 2.0)
    return out


def _too_tight(action) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    return [str(w.message) for w in caught if issubclass(w.category, GoldenToleranceWarning)]


def _x() -> torch.Tensor:
    return torch.randn(R, C, generator=torch.Generator().manual_seed(4)).half()


def test_the_coarser_of_output_and_expected_limits_the_comparison():
    assert comparison_dtype(FP32, FP32) is FP32
    assert comparison_dtype(FP16, FP32) is FP16  # an FP16 kernel against an FP32 reference
    assert comparison_dtype(FP32, FP16) is FP16  # expected values rounded to FP16
    assert comparison_dtype(FP32, None) is FP32  # float64 expected values limit nothing
    assert comparison_dtype(BF16, FP16) is BF16
    assert comparison_dtype(INT32, None) is None


def test_an_fp32_output_can_honour_1e_5_and_an_fp16_output_cannot():
    assert tolerance_too_tight(1e-5, 1e-5, comparison_dtype(FP32, FP32)) is None
    found = tolerance_too_tight(1e-5, 1e-5, comparison_dtype(FP16, FP32), what="output 'out'")
    assert found is not None and "output 'out'" in found.message and "FP16" in found.message
    assert tolerance_too_tight(1e-3, 0, comparison_dtype(FP16, FP32)) is None
    assert tolerance_too_tight(0, 0, comparison_dtype(INT32, None)) is None


def test_fp16_inputs_do_not_make_an_fp32_golden_too_tight(tmp_path):
    x = _x()
    assert _too_tight(lambda: write_golden(tmp_path, {"x": x}, {"out": x.float() * 2},
                                           rtol=1e-5, atol=1e-5)) == []


def test_an_fp16_expected_tensor_is_too_tight_at_1e_5(tmp_path):
    x = _x()
    found = _too_tight(lambda: write_golden(tmp_path, {"x": x}, {"out": x * 2},
                                            rtol=1e-5, atol=1e-5))
    assert len(found) == 1 and "GoldenToleranceTooTight" in found[0] and "FP16" in found[0]


def test_a_run_of_an_fp32_output_from_fp16_inputs_does_not_warn(tmp_path):
    x = _x()
    golden = write_golden(tmp_path, {"x": x}, {"out": x.double() * 2}, rtol=1e-5, atol=1e-5)
    out = torch.zeros(R, C)
    config = RunConfig(platform=PLATFORM, golden_data_dir=golden)
    assert _too_tight(lambda: widen_and_double(x, out, config=config)) == []


@pytest.mark.parametrize("expected", ["fp32", "fp64", "none recorded"])
def test_a_run_warns_when_the_output_dtype_is_coarser_than_the_tolerance(expected, tmp_path):
    """The FP32 or FP64 expected tensor hides the FP16 output at write time; the run knows."""
    x = _x()
    if expected == "none recorded":  # RunConfig's default rtol=atol=1e-5 applies
        golden = write_golden(tmp_path, {"x": x}, {"out": x.float() * 2})
    else:
        want = x.float() * 2 if expected == "fp32" else x.double() * 2
        golden = write_golden(tmp_path, {"x": x}, {"out": want}, rtol=1e-5, atol=1e-5)
    out = torch.zeros(R, C, dtype=torch.float16)
    config = RunConfig(platform=PLATFORM, golden_data_dir=golden)
    found = _too_tight(lambda: double16(x, out, config=config))
    assert len(found) == 1 and "output 'out'" in found[0] and "FP16" in found[0]
