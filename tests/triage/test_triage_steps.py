"""`pypto triage` on four planted mismatches reports the step of the precision page that
explains each: a too-tight tolerance (1), split-K last bits (2), a pass that corrupts the
IR (4, named) and a missing write-after-read edge (5, ordering); and step 1 does not blame
a tolerance the comparison's dtype can honour."""

from __future__ import annotations

import textwrap
import warnings
from dataclasses import replace

import pytest
import torch
from split_k_programs import split_k

import pypto.language as pl
from pypto import compiler, passes
from pypto.debug.triage import triage
from pypto.ir.types import FunctionType
from pypto.ir.visitor import IRMutator
from pypto.runtime import RunConfig, write_golden
from pypto.tools.cli import main as pypto_cli

R, C = 32, 128


def write(directory, inputs, expected, **tolerance):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the too-tight tolerance is the point of case 1
        return write_golden(directory, inputs, expected, **tolerance)


def walk(kernel, golden, tmp_path, **options):
    lines: list[str] = []
    report = triage(kernel, golden, work_dir=tmp_path / "work", out=lines.append, **options)
    return report, "\n".join(lines)


# --------------------------------------------------------------------------- step 1


FP16_ADD = '''
import pypto.language as pl


@pl.jit
def add16(a: pl.Tensor[[32, 128], pl.FP16], b: pl.Tensor[[32, 128], pl.FP16],
          out: pl.Out[pl.Tensor[[32, 128], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out
'''


@pytest.fixture
def fp16_case(tmp_path):
    """An FP16 add checked against its FP32 sum at rtol=atol=1e-5: (kernel file, golden)."""
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(R, C, generator=g).half(), torch.randn(R, C, generator=g).half()
    golden = write(tmp_path / "golden", {"a": a, "b": b}, {"out": a.float() + b.float()},
                   rtol=1e-5, atol=1e-5)
    source = tmp_path / "fp16_add.py"
    source.write_text(textwrap.dedent(FP16_ADD))
    return source, golden


def test_an_fp16_kernel_checked_at_1e_5_is_step_1(fp16_case, tmp_path):
    from pypto.debug.triage import load_callable

    source, golden = fp16_case
    report, text = walk(load_callable(source, "add16"), golden, tmp_path)
    assert (report.step, report.exit_code) == (1, 1)
    assert "[GoldenToleranceTooTight]" in text and "FP16" in text
    assert "the golden's tolerance, not the kernel, is wrong" in text
    assert [f.step for f in report.findings] == [1]  # it stops there


def test_the_cli_exits_with_the_step_for_a_file_and_callable(fp16_case, tmp_path, capsys):
    source, golden = fp16_case
    code = pypto_cli(["triage", f"{source}:add16", "--golden", str(golden), "--seeds", "2",
                  "--work-dir", str(tmp_path / "cli")])
    assert code == 1
    assert "result: step 1 (golden tolerance vs output precision)" in capsys.readouterr().out


WIDENING_ADD = '''
import pypto.language as pl


@pl.jit
def add16to32(a: pl.Tensor[[32, 128], pl.FP16], b: pl.Tensor[[32, 128], pl.FP16],
              out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(pl.cast(a, pl.FP32), pl.cast(b, pl.FP32))
    return out
'''


def test_fp16_inputs_with_an_fp32_result_honour_1e_5_so_step_1_does_not_blame_it(tmp_path):
    """The comparison is held in FP32 (output and expected): 1e-5 is honest there, FP16
    inputs or not, so a golden off by 1e-4 is not put down to its tolerance."""
    from pypto.debug.triage import load_callable

    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(R, C, generator=g).half(), torch.randn(R, C, generator=g).half()
    golden = write(tmp_path / "golden", {"a": a, "b": b},
                   {"out": (a.float() + b.float()) * (1 + 1e-4)}, rtol=1e-5, atol=1e-5)
    source = tmp_path / "widening_add.py"
    source.write_text(textwrap.dedent(WIDENING_ADD))
    report, text = walk(load_callable(source, "add16to32"), golden, tmp_path, seeds=2)
    first = report.findings[0]
    assert first.step == 1 and not first.explains
    assert "FP32 (the comparison's dtype) can honour" in text
    assert "[GoldenToleranceTooTight]" not in text
    assert report.step != 1


# --------------------------------------------------------------------------- step 2

M, N, K = 64, 64, 512  # random FP32 inputs: the order of the atomic adds shows in the bits


@pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")
def test_split_k_last_bit_variation_against_an_exact_golden_is_step_2(tmp_path):
    g = torch.Generator().manual_seed(2024)
    a, b = torch.randn(M, K, generator=g), torch.randn(K, N, generator=g)
    c = torch.zeros(M, N)
    split_k(a, b, c, config=RunConfig(schedule_seed=0))  # the golden: one run's bits
    golden = write(tmp_path / "golden", {"a": a, "b": b}, {"c": c}, rtol=0, atol=0)
    report, text = walk(split_k, golden, tmp_path)
    assert (report.step, report.exit_code) == (2, 2)
    assert "varies between seeds" in text and "ulp" in text
    assert "atomic adds (split-K)" in text
    assert [f.step for f in report.findings] == [1, 2]


# --------------------------------------------------------------------------- step 4


class SwapAddForSub(passes.FunctionPass):
    """A planted bug: turns every add of a kernel into a sub."""

    name = "SwapAddForSub"
    applies_to = (FunctionType.InCore,)

    def run_function(self, fn, ctx):
        class Swap(IRMutator):
            def mutate_Call(self, expr):
                expr = super().mutate_Call(expr)
                return replace(expr, op="sub") if expr.op == "add" else expr

        return Swap().mutate_function(fn)


@pl.jit
def fused(a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.add(a, b), 2.0)
    return out


def test_a_pass_that_corrupts_the_ir_is_step_4_and_named(tmp_path, monkeypatch):
    pipeline = passes.default_pipeline()
    after = [p.name for p in pipeline.passes].index("TensorToTile") + 1

    def corrupted_pipeline():
        pipeline = passes.default_pipeline()
        pipeline.passes.insert(after, SwapAddForSub())
        return pipeline

    monkeypatch.setattr(compiler, "default_pipeline", corrupted_pipeline)
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(R, C, generator=g), torch.randn(R, C, generator=g)
    golden = write(tmp_path / "golden", {"a": a, "b": b}, {"out": (a + b) * 2})
    report, text = walk(fused, golden, tmp_path)
    assert (report.step, report.exit_code) == (4, 4)
    assert [f.step for f in report.findings] == [1, 2, 3, 4]
    step4 = "\n".join(report.finding(4).lines)
    assert f"{passes.dump_name(after + 1, 'SwapAddForSub')}: max_abs_diff" in step4
    assert "the pass `SwapAddForSub` changed the program's meaning" in step4
    assert "+        add_0_tile_0: pl.Tile[[32, 128], pl.FP32] = pl.sub(" in step4
    assert "ROUNDTRIP verification passes" in text  # step 3 saw nothing wrong


# --------------------------------------------------------------------------- step 5


@pl.jit.incore
def read_x(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    y = pl.store(pl.mul(pl.load(x, [0, 0], [R, C]), 2.0), [0, 0], y)
    return y


@pl.jit.incore
def overwrite_x(x: pl.Out[pl.Tensor[[R, C], pl.FP32]], z: pl.Tensor[[R, C], pl.FP32]):
    x = pl.store(pl.load(z, [0, 0], [R, C]), [0, 0], x)
    return x


@pl.jit
def racy(x: pl.InOut[pl.Tensor[[R, C], pl.FP32]], z: pl.Tensor[[R, C], pl.FP32],
         y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    y = read_x(x, y)
    x = overwrite_x(x, z)  # no edge orders it after the read
    return x, y


def test_a_missing_write_after_read_edge_is_an_ordering_bug_found_by_the_dumps(tmp_path):
    g = torch.Generator().manual_seed(7)
    x, z = torch.randn(R, C, generator=g), torch.randn(R, C, generator=g)
    golden = write(tmp_path / "golden", {"x": x, "z": z}, {"x": z, "y": x * 2})
    report, text = walk(racy, golden, tmp_path)
    assert (report.step, report.exit_code) == (5, 5)
    assert [f.step for f in report.findings] == [1, 2, 5]  # pass dumps cannot explain it
    assert "write-after-read race on `x`" in text
    assert "task 1 (overwrite_x) writes it" in text and "task 0 (read_x) reads it" in text
    step5 = "\n".join(report.finding(5).lines)
    assert "first divergent task" in step5
    assert "task 0 (read_x), input `x` (buffer `x`) before it ran" in step5
    dumps = sorted((tmp_path / "work").glob("dumps_seed*/dfx_outputs/args_dump/args_dump.json"))
    assert len(dumps) == 2


def test_a_matching_spec_kernel_exits_0(tmp_path, capsys):
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = pypto_cli(["triage", "add/f32_33x100", "--top", str(root), "--seeds", "2",
                  "--work-dir", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "result: the kernel matches its golden on every run (exit 0)" in out
    assert (tmp_path / "golden" / "add" / "f32_33x100" / "golden.json").is_file()
