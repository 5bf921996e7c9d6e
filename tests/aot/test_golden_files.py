"""write_golden, golden.json, the golden check of a run, SpecRNG and references."""

from __future__ import annotations

import hashlib
import json
import math

import pytest
import torch

import pypto.language as pl
from pypto.comparison import GoldenToleranceWarning
from pypto.golden import Close, Exact, GoldenCase, SpecRNG, compare_tensor, record_golden
from pypto.runtime import (
    GoldenError,
    GoldenMismatchError,
    GoldenRecord,
    RunConfig,
    Tolerance,
    write_golden,
)
from pypto.spec import Kernel


@pl.jit
def double_it(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(x, 2.0)
    return out


def _tensors():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(16, 32, generator=g)
    return {"x": x}, {"out": x * 2}


def test_rewriting_the_same_golden_changes_no_byte(tmp_path):
    inputs, expected = _tensors()
    write_golden(tmp_path / "g", inputs, expected, rtol=0, atol=0, reason="exact doubling")
    before = {p.name: p.read_bytes() for p in (tmp_path / "g").iterdir()}
    write_golden(tmp_path / "g", inputs, expected, rtol=0, atol=0, reason="exact doubling")
    write_golden(tmp_path / "h", inputs, expected, rtol=0, atol=0, reason="exact doubling")
    assert {p.name: p.read_bytes() for p in (tmp_path / "g").iterdir()} == before
    assert {p.name: p.read_bytes() for p in (tmp_path / "h").iterdir()} == before


def test_golden_json_records_hashes_shapes_tolerance_and_producers_but_no_time(tmp_path):
    inputs, expected = _tensors()
    path = write_golden(tmp_path, {**inputs, "scale": 2.0}, expected, rtol=1e-6, atol=0.0,
                        reason="one rounding", seed=7, generator="test-gen")
    record = json.loads((path / "golden.json").read_text())
    digest = hashlib.sha256((path / "inputs.safetensors").read_bytes()).hexdigest()
    assert record["files"]["inputs"] == {"file": "inputs.safetensors", "sha256": digest}
    assert record["inputs"] == [{"name": "x", "dtype": "FP32", "shape": [16, 32]}]
    assert record["scalars"] == [{"name": "scale", "type": "float", "value": 2.0}]
    assert record["expected"] == [{"name": "out", "dtype": "FP32", "shape": [16, 32]}]
    assert record["tolerance"] == {"out": {"policy": "close", "rtol": 1e-6, "atol": 0.0,
                                           "reason": "one rounding"}}
    assert record["seed"] == 7 and record["generator"] == "test-gen"
    assert set(record["producer"]) == {"pypto", "torch", "safetensors"}
    text = (path / "golden.json").read_text()
    assert "time" not in text and "date" not in text
    assert not any(p.suffix in (".pt", ".pkl", ".pickle") for p in path.iterdir())


def test_overwriting_a_different_golden_needs_overwrite(tmp_path):
    inputs, expected = _tensors()
    write_golden(tmp_path, inputs, expected)
    with pytest.raises(FileExistsError, match="expected.safetensors.*overwrite=True"):
        write_golden(tmp_path, inputs, {"out": expected["out"] + 1})
    write_golden(tmp_path, inputs, {"out": expected["out"] + 1}, overwrite=True)
    assert torch.equal(GoldenRecord.read(tmp_path).load_expected()["out"], expected["out"] + 1)


def test_a_tolerance_finer_than_the_dtype_warns(tmp_path):
    x = torch.ones(4, dtype=torch.float16)
    with pytest.warns(GoldenToleranceWarning, match="tighter than FP16"):
        write_golden(tmp_path, {"x": x}, {"out": x}, rtol=1e-5, atol=0)


def test_run_matching_its_golden_passes(tmp_path):
    inputs, expected = _tensors()
    write_golden(tmp_path, inputs, expected, rtol=0, atol=0, reason="doubling is exact")
    out = torch.empty(16, 32)
    double_it(inputs["x"], out, config=RunConfig(platform="a5sim", golden_data_dir=tmp_path))
    assert torch.equal(out, expected["out"])


def test_mismatch_names_the_tensor_count_worst_index_and_errors(tmp_path):
    inputs, expected = _tensors()
    wrong = expected["out"].clone()
    wrong[3, 5] += 1.0
    wrong[7, 1] += 0.25
    write_golden(tmp_path, inputs, {"out": wrong}, rtol=0, atol=1e-3, reason="test")
    with pytest.raises(GoldenMismatchError) as info:
        double_it(inputs["x"], torch.empty(16, 32),
                  config=RunConfig(platform="a5sim", golden_data_dir=tmp_path))
    message = str(info.value)
    assert "out: 2 of 512 elements outside rtol=0 atol=0.001" in message
    assert "worst at index [3, 5]" in message and "max abs error 1" in message
    assert "max rel error" in message
    (comparison,) = info.value.report.outputs
    assert comparison.mismatches == 2 and comparison.worst_index == (3, 5)


def test_inputs_other_than_the_recorded_ones_are_reported(tmp_path):
    inputs, expected = _tensors()
    write_golden(tmp_path, inputs, expected)
    other = inputs["x"].clone()
    other[0, 0] = 100.0
    with pytest.raises(GoldenMismatchError, match="inputs that differ from the recorded "
                                                  "inputs.*: x"):
        double_it(other, torch.empty(16, 32),
                  config=RunConfig(platform="a5sim", golden_data_dir=tmp_path))


def test_nan_equals_only_nan():
    nan, inf = math.nan, math.inf
    actual = torch.tensor([nan, 1.0, inf, nan, 2.0])
    expected = torch.tensor([nan, nan, inf, 1.0, 2.0 + 1e-3])
    result = compare_tensor("t", actual, expected, Tolerance(0.0, 1e-3))
    assert result.mismatches == 2  # 1.0 vs NaN, NaN vs 1.0; inf == inf; 2.0 within atol
    assert result.max_abs == math.inf


def test_a_flipped_byte_in_a_golden_file_names_the_file_and_both_hashes(tmp_path):
    inputs, expected = _tensors()
    write_golden(tmp_path, inputs, expected)
    path = tmp_path / "expected.safetensors"
    recorded = hashlib.sha256(path.read_bytes()).hexdigest()
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(GoldenError) as info:
        GoldenRecord.read(tmp_path)
    found = hashlib.sha256(bytes(data)).hexdigest()
    assert "expected.safetensors" in str(info.value)
    assert recorded in str(info.value) and found in str(info.value)


def test_spec_rng_is_seeded_by_case_and_leaves_global_rng_alone():
    from pypto.spec import tensor

    like = tensor("fp16", [4, 8])
    state = torch.get_rng_state()
    one = SpecRNG.for_case("add", "v1").normal(like)
    two = SpecRNG.for_case("add", "v1").normal(like)
    other = SpecRNG.for_case("add", "v2").normal(like)
    assert torch.equal(torch.get_rng_state(), state)
    assert one.dtype == torch.float16 and torch.equal(one, two) and not torch.equal(one, other)


def test_scalars_are_rounded_to_their_dtype():
    from pypto.spec import scalar

    value = SpecRNG(1).uniform(scalar("fp32"), 0.0, 1.0)
    assert isinstance(value, float) and float(torch.tensor(value, dtype=torch.float32)) == value


def _case(reference, tmp_kernel=double_it):
    spec = Kernel(tmp_kernel, variants={"v": {"x": ("fp32", [4, 4]), "out": ("fp32", [4, 4])}},
                  inputs=lambda rng, v: {"x": rng.normal(v.x)}, reference=reference,
                  tolerance=Exact("doubling is exact"))
    return spec.golden_case("v")


def test_reference_runs_on_copies_of_the_inputs(tmp_path):
    def clobbering(x):
        result = x.double() * 2
        x.zero_()  # must not reach the recorded inputs
        return result

    record = GoldenRecord.read(record_golden(_case(clobbering), tmp_path))
    x = record.load_inputs()["x"]
    assert x.abs().sum() > 0
    assert torch.equal(record.load_expected()["out"], x * 2)


def test_reference_result_of_the_wrong_shape_names_the_spec():
    case = _case(lambda x: x.double()[:2])
    with pytest.raises(ValueError, match=r"test_golden_files.py:\d+: spec 'double_it' variant "
                                         r"'v': the reference's 'out' has shape \[2, 4\]"):
        record_golden(case, "/nonexistent/never-written")


def test_tolerance_policies_need_reasons():
    with pytest.raises(ValueError, match="needs a reason"):
        Exact("")
    with pytest.raises(ValueError, match="write Exact"):
        Close(0, 0, "zero")
    assert Close(1e-3, 0, "r").policy == "close" and Exact("r").policy == "exact"


def test_golden_case_is_plain_data():
    case = _case(lambda x: x.double() * 2)
    assert isinstance(case, GoldenCase)
    assert case.inputs == ("x",) and case.outputs == ("out",)


def test_the_seeds_default_tolerance_warns_for_fp16_results(tmp_path):
    """Step 1 of the precision page: rtol=atol=1e-5 cannot judge FP16 results (FP16 inputs
    alone limit nothing: tests/golden/test_golden_tolerance_check.py)."""
    from pypto.ir import PyptoWarning

    x = torch.ones(4, dtype=torch.float16)
    with pytest.warns(PyptoWarning, match="GoldenToleranceTooTight.*FP16"):
        write_golden(tmp_path, {"x": x}, {"out": x * 2}, rtol=1e-5, atol=1e-5)
