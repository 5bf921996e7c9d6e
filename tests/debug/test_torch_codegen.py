"""torch_codegen: the IR's semantics as executable torch, for every stage of the pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.compiler import CompileOptions, run_pipeline
from pypto.debug import load_entry, torch_codegen
from pypto.ir import PassDumpLevel
from pypto.passes import dump_of
from pypto.platform import get_platform
from pypto.runtime import RunConfig

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py


@pl.jit
def fused(a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
          out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.add(a, b), 2.0)
    return out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_generated_source_reproduces_the_kernel(platform):
    a, b = torch.randn(64, 128), torch.randn(64, 128)
    program = fused.lower(a, b, torch.zeros(64, 128), config=RunConfig(platform=platform))
    entry = load_entry(torch_codegen(program), "fused")
    out = torch.zeros(64, 128)
    result = entry(a, b, out)
    assert torch.equal(out, (a + b) * 2) and result is out


def test_every_pass_dump_runs_and_agrees():
    a, b = torch.randn(64, 128), torch.randn(64, 128)
    lowered = run_pipeline(fused.frontend(a, b, torch.zeros(64, 128)),
                           get_platform("a5sim"), CompileOptions(dump_passes=True))
    for path, text in sorted(lowered.files.items()):
        if not path.startswith("passes_dump/"):
            continue
        program = pl.parse(text)
        out = torch.zeros(64, 128)
        load_entry(torch_codegen(program, check_shapes=True), program.entry)(a, b, out)
        assert torch.equal(out, (a + b) * 2), path


def test_check_shapes_catches_a_shape_corrupted_program():
    a, b = torch.randn(64, 128), torch.randn(64, 128)
    source = torch_codegen(fused.lower(a, b, torch.zeros(64, 128)), check_shapes=True)
    load_entry(source, "fused")(a, b, torch.zeros(64, 128))  # consistent: passes
    # A hand-edited window: the generated code now loads half the rows it declares.
    corrupted = source.replace("[64, 128], target_memory", "[32, 128], target_memory", 1)
    assert corrupted != source
    with pytest.raises(AssertionError, match="the IR says"):
        load_entry(corrupted, "fused")(a, b, torch.zeros(64, 128))


def test_a_shape_corrupted_dump_file_is_refused_with_its_name(tmp_path):
    from pypto.debug import validate_pass_dumps
    from pypto.ir import TypeCheckError

    a, b = torch.randn(64, 128), torch.randn(64, 128)
    lowered = run_pipeline(fused.frontend(a, b, torch.zeros(64, 128)), get_platform("a2a3sim"),
                           CompileOptions(dump_passes=PassDumpLevel.EXPLICIT))
    for path, text in lowered.files.items():
        if path.startswith("passes_dump/"):
            (tmp_path / Path(path).name).write_text(text)
    victim = dump_of(tmp_path.iterdir(), "TensorToTile")
    victim.write_text(victim.read_text().replace("[64, 128], pl.FP32] = pl.load",
                                                 "[64, 64], pl.FP32] = pl.load", 1))
    with pytest.raises(TypeCheckError, match=victim.name):
        validate_pass_dumps(tmp_path, [a, b, torch.zeros(64, 128)], {"out": (a + b) * 2},
                            out=lambda line: None)


@pl.jit
def casts(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.INT8]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.INT8, mode="round")
    return out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_cast_chains_agree_bit_for_bit_with_the_simulator(platform):
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(16, 128, generator=g) * 100).round() / 4  # many exact halves: ties
    sim_out = torch.zeros(16, 128, dtype=torch.int8)
    cfg = RunConfig(platform=platform)
    casts(x, sim_out, config=cfg)
    program = casts.lower(x, sim_out, config=cfg)
    assert "pl.FP16" in program.as_python()  # FP32→INT8 goes through FP16 on both backends
    torch_out = torch.zeros(16, 128, dtype=torch.int8)
    load_entry(torch_codegen(program), "casts")(x, torch_out)
    assert torch.equal(sim_out, torch_out)


def test_a_function_alone_is_accepted():
    a, b = torch.randn(64, 128), torch.randn(64, 128)
    program = fused.lower(a, b, torch.zeros(64, 128))
    kernel = program.functions[0]
    source = torch_codegen(kernel)
    assert f"def {kernel.name}(" in source


@pl.jit.incore
def first_cols(x: pl.Tensor[[16, 128], pl.FP32], n: pl.Scalar[pl.INDEX],
               out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    # -inf padding: the row maximum (which reads the padding too) is the valid part's.
    t = pl.load(x, [0, 0], [16, 128], valid_shape=[16, n], pad_value=pl.PadValue.min)
    m = pl.row_max(t, pl.create_tile([16, 128], pl.FP32))
    out = pl.store(pl.row_expand_sub(t, m), [0, 0], out)
    return out


@pytest.mark.parametrize("n", [1, 37, 128])
def test_a_valid_region_known_at_run_time_reads_the_scalar(n):
    # The extent used to be written as the IR's repr (`Var(name='n', ...)`): a NameError.
    x = torch.randn(16, 128)
    sim, ref = torch.zeros(16, 128), torch.zeros(16, 128)
    first_cols(x, n, sim)
    for program in (first_cols.frontend(x, n, ref), first_cols.lower(x, n, ref)):
        source = torch_codegen(program)
        assert "Var(" not in source
        load_entry(source, program.entry)(x, n, ref)
        assert torch.equal(ref[:, :n], sim[:, :n])
        assert torch.equal(ref[:, :n], x[:, :n] - x[:, :n].max(dim=1, keepdim=True).values)
