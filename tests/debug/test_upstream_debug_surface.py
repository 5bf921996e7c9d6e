"""Upstream PyPTO's torch-codegen guide (docs/en/user/tools/01-torch-codegen.md) as written:
`pypto.backend.set_backend_type` / `reset_for_testing`, `PassManager.get_strategy(
OptimizationStrategy.Default).run_passes(program)`, `torch_codegen(..., check_shapes=True)`
of the lowered program, and `validate_pass_ir_codegen_results` on a pass dump directory or
one IR file."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import (
    BackendType,
    get_backend_type,
    is_backend_configured,
    reset_for_testing,
    set_backend_type,
)
from pypto.compiler import lower
from pypto.debug import load_entry, torch_codegen, validate_pass_ir_codegen_results
from pypto.ir.pass_manager import OptimizationStrategy, PassManager
from pypto.passes import dump_of
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


@pl.jit
def mixed(a: pl.Tensor[[32, 64], pl.FP16], b: pl.Tensor[[64, 128], pl.FP16],
          bias: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        out[:] = pl.add(pl.matmul(a, b, out_dtype=pl.FP32), bias)
    return out


def _tensors():
    g = torch.Generator().manual_seed(5)
    a = torch.randn(32, 64, generator=g).half()
    b = torch.randn(64, 128, generator=g).half()
    bias = torch.randn(32, 128, generator=g)
    return {"a": a, "b": b, "bias": bias, "out": torch.zeros(32, 128)}


@pytest.fixture(autouse=True)
def _no_backend():
    reset_for_testing()
    yield
    reset_for_testing()


def test_the_backend_is_configured_once_until_reset():
    assert not is_backend_configured()
    with pytest.raises(RuntimeError, match="set_backend_type"):
        get_backend_type()
    set_backend_type(BackendType.Ascend910B)
    set_backend_type(BackendType.Ascend910B)  # the same one again: fine
    assert get_backend_type() is BackendType.Ascend910B
    with pytest.raises(ValueError, match="already Ascend910B; call reset_for_testing"):
        set_backend_type(BackendType.Ascend950)
    reset_for_testing()
    set_backend_type(BackendType.Ascend950)
    assert get_backend_type() is BackendType.Ascend950


@pytest.mark.parametrize(("backend", "platform"), [(BackendType.Ascend910B, "a2a3sim"),
                                                   (BackendType.Ascend950, "a5sim")])
def test_the_guides_codegen_after_the_default_pipeline_runs(backend, platform):
    tensors = _tensors()
    program = mixed.frontend(*tensors.values())
    set_backend_type(backend)
    try:
        transformed = PassManager.get_strategy(OptimizationStrategy.Default).run_passes(program)
        code = torch_codegen(transformed, check_shapes=True)
    finally:
        reset_for_testing()
    assert transformed.as_python() == lower(program, get_platform(platform)).as_python()
    assert "tpush_to_aiv" in code and "tpop_from_aic" in code  # the pipe the split made
    out = tensors["out"].clone()
    load_entry(code, transformed.entry)(tensors["a"], tensors["b"], tensors["bias"], out)
    golden = tensors["a"].float() @ tensors["b"].float() + tensors["bias"]
    assert torch.allclose(out, golden, rtol=1e-4, atol=1e-4)


def test_run_passes_needs_a_configured_backend():
    program = mixed.frontend(*_tensors().values())
    with pytest.raises(RuntimeError, match="no backend is configured"):
        PassManager.get_strategy(OptimizationStrategy.Default).run_passes(program)


def test_every_dumped_pass_ir_and_one_file_validate(tmp_path, capsys):
    tensors = _tensors()
    compiled = ir.compile(mixed.frontend(*tensors.values()), output_dir=tmp_path / "art",
                          dump_passes=True)
    golden = tensors["a"].float() @ tensors["b"].float() + tensors["bias"]
    results = validate_pass_ir_codegen_results(compiled.output_dir / "passes_dump", tensors,
                                               {"out": golden}, rtol=1e-4, atol=1e-4)
    assert len(results) > 10 and all(r.within_tolerance for r in results)
    one = dump_of((compiled.output_dir / "passes_dump").iterdir(), "ExpandMixedKernel")
    [result] = validate_pass_ir_codegen_results(one, tensors, {"out": golden},
                                                rtol=1e-4, atol=1e-4)
    assert result.file == one.name and result.within_tolerance
    assert capsys.readouterr().out.count("max_abs_diff=") == len(results) + 1
