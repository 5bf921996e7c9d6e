"""A program whose orchestration reads tensor extents from an input tensor
(`head_dim = pl.tensor.read(config, [3])`, upstream's 04_paged_attention): upstream reads
them at run time.  Here tensor extents are compile-time constants, so the program is
specialised for the values of those elements at each call (a `ProgramTemplate`), and
the specialised program starts by checking them (`pl.expect_value`: an orchestration
run with other values stops with status 5).  A slice's runtime extent in orchestration
code is the valid part of its window (the view the task is handed)."""

from __future__ import annotations

import pytest
import torch

import pypto.ir as ir
import pypto.language as pl
from pypto.ir import ParseError, TypeCheckError
from pypto.language.program_template import expected_values
from pypto.runtime import OrchestrationError, run

R, C = 16, 128


@pl.program
class Configured:
    @pl.function(type=pl.FunctionType.InCore)
    def twice(self, x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]
               ) -> pl.Tensor[[R, C], pl.FP32]:
        out = pl.store(pl.mul(pl.load(x, [0, 0], [R, C]), 2.0), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[4 * R, C], pl.FP32], out: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]],
             config: pl.Tensor[[2], pl.INT64]) -> pl.Tensor[[4 * R, C], pl.FP32]:
        rows = pl.tensor.read(config, [0])  # a tensor extent, read at run time upstream
        blocks = pl.tensor.read(config, [1])
        for b in pl.range(blocks):
            scratch = pl.create_tensor([rows, C], dtype=pl.FP32)
            scratch = self.twice(pl.slice(x, [rows, C], [b * rows, 0]), scratch)
            view = pl.slice(out, [rows, C], [b * rows, 0])
            view = self.twice(scratch, view)
        return out


def test_a_program_reading_extents_from_an_input_is_specialised_per_value():
    assert isinstance(Configured, pl.ProgramTemplate)
    x = torch.randn(4 * R, C)
    for blocks in (4, 2):
        out = torch.zeros(4 * R, C)
        run(Configured, x, out, torch.tensor([R, blocks]))
        assert torch.equal(out[:blocks * R], x[:blocks * R] * 4.0)
    program = Configured.specialize_for(x, out, torch.tensor([R, 2]))
    assert expected_values(program) == [("config", (0,), R), ("config", (1,), 2)]
    assert Configured.specialize_for(x, out, torch.tensor([R, 2])) is program  # cached


def test_a_specialised_program_run_with_other_values_stops_before_any_task():
    x, out = torch.randn(4 * R, C), torch.zeros(4 * R, C)
    program = Configured.specialize_for(x, out, torch.tensor([R, 4]))
    compiled = ir.compile(program, platform="a2a3sim")
    with pytest.raises(OrchestrationError, match="returned 5.*specialised for"):
        compiled(x, out, torch.tensor([R, 3]))


def test_a_specialised_program_prints_its_checks_and_parses_back():
    x, out = torch.randn(4 * R, C), torch.zeros(4 * R, C)
    program = Configured.specialize_for(x, out, torch.tensor([R, 4]))
    text = program.as_python()
    assert "pl.expect_value(_expected_0, 16)" in text
    assert pl.parse(text) == program


@pl.jit.incore
def copy_valid(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
               n: pl.Scalar[pl.INDEX]):
    out = pl.store(pl.load(x, [0, 0], [R, C], valid_shape=[R, n]), [0, 0], out)
    return out


@pl.jit
def runtime_extent(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
                   n: pl.Scalar[pl.INDEX]):
    part = pl.slice(x, [R, n], [0, 0])  # a runtime extent: the valid part of [R, C]
    out = copy_valid(part, out, n)
    return out


def test_a_runtime_slice_extent_in_orchestration_is_the_windows_valid_part():
    x, out = torch.randn(R, C), torch.zeros(R, C)
    runtime_extent(x, out, 40)
    assert torch.equal(out[:, :40], x[:, :40])
    assert "pl.slice(x, [16, 128], [0, 0], valid_shape=[16, n])" in \
        runtime_extent.lower(x, out, 40).as_python()


def test_a_runtime_slice_extent_in_a_kernel_is_refused_at_its_line():
    @pl.jit.incore
    def kernel(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
               n: pl.Scalar[pl.INDEX]):
        part = pl.slice(x, [R, n], [0, 0])
        out = pl.store(pl.load(part, [0, 0], [R, C]), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match="extents must be constants"):
        kernel.lower(torch.zeros(R, C), torch.zeros(R, C), 4)


def test_pl_parse_of_such_a_program_reports_the_runtime_extent_at_its_line():
    # Text has no call to specialise for: the extent is a runtime value there.
    text = (
        "@pl.program\n"
        "class P:\n"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        "    def main(self, config: pl.Tensor[[2], pl.INT64]) -> pl.Tensor[[2], pl.INT64]:\n"
        "        rows = pl.tensor.read(config, [0])\n"
        "        scratch = pl.create_tensor([rows, 16], dtype=pl.FP32)\n"
        "        return config\n"
    )
    with pytest.raises(ParseError, match="`rows` is a runtime value") as info:
        pl.parse(text)
    assert info.value.span.line == 6
