"""A parameter declared `pl.Out` stays an output of its golden, even where the compiler
reads it: split-K zeroes `c` in one task and atomically adds partial products into it in
others, so DeriveCallDirections widens the entry's `c` to InOut."""

from __future__ import annotations

import pytest
import torch
from split_k_programs import K, M, N, split_k, split_k_unzeroed

from pypto.golden import Exact, portable, record_golden
from pypto.runtime import GoldenMismatchError, GoldenRecord, RunConfig
from pypto.runtime.abi import Direction
from pypto.runtime.loader import load_artifact
from pypto.spec import Kernel

pytestmark = pytest.mark.small_tiles  # split_k_programs: 16 x 16 tiles; see tests/conftest.py

PLATFORM = "a2a3sim"


def _inputs(rng, v):
    # Multiples of 2^-4 in [0, 2]: every partial sum is exact in FP32, in any order.
    return {"a": rng.integers(v.a, 0, 33) / 16, "b": rng.integers(v.b, 0, 33) / 16}


def _spec(kernel) -> Kernel:
    return Kernel(
        kernel,
        variants={"v": {"a": ("fp16", [M, K]), "b": ("fp16", [K, N]), "c": ("fp32", [M, N])}},
        inputs=_inputs,
        reference=portable.matmul,
        tolerance=Exact("multiples of 2^-8 below 2^11: exact in FP32 in any order"),
    )


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    return record_golden(_spec(split_k).golden_case("v"), tmp_path_factory.mktemp("golden"))


def _loaded(kernel, tmp_path):
    compiled = kernel.compile(torch.zeros(M, K, dtype=torch.float16),
                              torch.zeros(K, N, dtype=torch.float16), torch.zeros(M, N),
                              config=RunConfig(platform=PLATFORM))
    return load_artifact(compiled.output_dir, platform=PLATFORM)


def test_a_declared_out_is_an_output_of_the_golden_and_not_an_input(golden):
    case = _spec(split_k).golden_case("v")
    assert (case.inputs, case.outputs) == (("a", "b"), ("c",))
    record = GoldenRecord.read(golden)
    assert [t.name for t in record.inputs] == ["a", "b"]
    assert record.output_names == ("c",)


def test_the_compiler_reads_the_declared_out(tmp_path):
    params = {p.name: p for p in _loaded(split_k, tmp_path).manifest.params}
    assert params["c"].direction is Direction.INOUT  # what made the golden path refuse it


def test_the_golden_runs_a_kernel_whose_declared_out_the_compiler_widened(golden, tmp_path):
    program = _loaded(split_k, tmp_path)
    record = GoldenRecord.read(golden)
    args = record.run_arguments(program.manifest.params)
    assert torch.isnan(args[2]).all()  # the device's poison, not zeros
    program.run(args, RunConfig(platform=PLATFORM, golden_data_dir=golden))
    assert torch.equal(args[2], record.load_expected()["c"])


def test_a_kernel_that_reads_its_uninitialised_out_fails_its_golden(golden, tmp_path):
    program = _loaded(split_k_unzeroed, tmp_path)
    args = GoldenRecord.read(golden).run_arguments(program.manifest.params)
    with pytest.raises(GoldenMismatchError, match="c: 256 of 256 elements"):
        program.run(args, RunConfig(platform=PLATFORM, golden_data_dir=golden))
    assert torch.isnan(args[2]).all()


def test_a_checked_run_poisons_the_callers_declared_out_the_program_reads(golden, tmp_path):
    record = GoldenRecord.read(golden)
    inputs = record.load_inputs()
    c = torch.zeros(M, N)  # zeros would hide the missing zeroing task
    with pytest.raises(GoldenMismatchError, match="c: 256 of 256 elements"):
        split_k_unzeroed(inputs["a"], inputs["b"], c,
                         config=RunConfig(platform=PLATFORM, golden_data_dir=golden))
    c = torch.zeros(M, N)
    split_k(inputs["a"], inputs["b"], c,
            config=RunConfig(platform=PLATFORM, golden_data_dir=golden))
    assert torch.equal(c, record.load_expected()["c"])


def test_a_read_parameter_the_golden_does_not_record_is_refused(golden, tmp_path):
    from pypto.runtime import GoldenError

    params = [p for p in _loaded(split_k, tmp_path).manifest.params]
    renamed = [type(p)(f"{p.name}2", p.kind, p.dtype, p.direction, p.shape) if p.name == "a"
               else p for p in params]
    with pytest.raises(GoldenError, match="records no input 'a2', which the kernel reads"):
        GoldenRecord.read(golden).run_arguments(renamed)
