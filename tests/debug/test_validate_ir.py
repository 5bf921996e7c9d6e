"""validate_ir: the first pass dump whose meaning leaves tolerance is named."""

from __future__ import annotations

import shutil

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.debug import validate_pass_dumps
from pypto.passes import dump_of


@pl.jit
def fused(a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
          out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.add(a, b), 2.0)
    return out


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    g = torch.Generator().manual_seed(11)
    a, b = torch.randn(64, 128, generator=g), torch.randn(64, 128, generator=g)
    out = torch.zeros(64, 128)
    compiled = ir.compile(fused.frontend(a, b, out),
                          output_dir=tmp_path_factory.mktemp("fused") / "artifact",
                          dump_passes=ir.PassDumpLevel.EXPLICIT)
    return compiled, [a, b, out], {"out": (a + b) * 2}


def _copy_dumps(compiled, tmp_path):
    dst = tmp_path / "dumps"
    shutil.copytree(compiled.output_dir / "passes_dump", dst)
    return dst


def test_an_intact_pipeline_validates(case, capsys):
    compiled, tensors, expected = case
    results = compiled.validate_ir(tensors, expected, rtol=1e-6, atol=1e-6)
    assert [r.file for r in results][0] == "00_frontend.py"
    assert all(r.within_tolerance for r in results)
    printed = capsys.readouterr().out
    assert printed.count("max_abs_diff=") == len(results)


def test_an_operator_changed_in_one_dump_names_that_file(case, tmp_path):
    compiled, tensors, expected = case
    dumps = _copy_dumps(compiled, tmp_path)
    victim = dump_of(dumps.iterdir(), "LegalizeTileCast")
    text = victim.read_text()
    assert "pl.add(" in text
    victim.write_text(text.replace("pl.add(", "pl.sub(", 1))
    with pytest.raises(AssertionError) as info:
        validate_pass_dumps(dumps, tensors, expected, rtol=1e-6, atol=1e-6)
    message = str(info.value)
    assert message.startswith(f"{victim.name} is the first dump")
    assert "-" in message and "pl.sub(" in message  # the IR diff against the dump before


def test_default_tolerance_misses_a_small_change_that_the_users_catches(case, tmp_path):
    compiled, tensors, expected = case
    dumps = _copy_dumps(compiled, tmp_path)
    victim = dump_of(dumps.iterdir(), "InferMemorySpace")
    victim.write_text(victim.read_text().replace(", 2.0)", ", 2.002)", 1))
    validate_pass_dumps(dumps, tensors, expected)  # 5e-2 by default: passes, wrongly
    with pytest.raises(AssertionError, match=victim.name):
        validate_pass_dumps(dumps, tensors, expected, rtol=1e-5, atol=1e-5)


def test_dumps_are_required(tmp_path):
    compiled = ir.compile(
        fused.frontend(torch.zeros(64, 128), torch.zeros(64, 128), torch.zeros(64, 128)),
        output_dir=tmp_path / "nodump", dump_passes=False)
    with pytest.raises(FileNotFoundError, match="dump_passes=True"):
        compiled.validate_ir([torch.zeros(64, 128)] * 3, {"out": torch.zeros(64, 128)})
