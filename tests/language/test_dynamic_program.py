"""A `@pl.program` whose entry has `pl.dynamic` dimensions (upstream's dynamic-shape
programs): parsed per call's tensors, its dimensions read as that call's sizes; kernel
tensors carried in place through `init_values`; `@pl.function` kernels made by a factory
read the factory's locals in their annotations."""

from __future__ import annotations

import pytest
import torch

import pypto.ir as ir
import pypto.language as pl
from pypto.debug import load_entry, torch_codegen
from pypto.ir.errors import TypeCheckError
from pypto.runtime import run

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

ROWS = pl.dynamic("ROWS")
TILE = 16


def make_double(cols: int):
    width = cols  # read by the annotations only: no closure variable of the kernel

    @pl.function(type=pl.FunctionType.InCore)
    def twice(a: pl.Tensor[[ROWS, width], pl.FP32], n: pl.Scalar[pl.INDEX],
               o: pl.Out[pl.Tensor[[ROWS, width], pl.FP32]]) -> pl.Tensor[[ROWS, width], pl.FP32]:
        for i, (acc,) in pl.range(n, init_values=(o,)):
            t = pl.load(a, [i * TILE, 0], [TILE, width])
            written = pl.store(pl.add(t, t), [i * TILE, 0], acc)
            result = pl.yield_(written)
        return result

    return twice


_double = make_double(64)


@pl.program
class Doubler:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[ROWS, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]) -> pl.Tensor[[ROWS, 64], pl.FP32]:
        rows = pl.tensor.dim(a, 0)
        blocks = rows // TILE
        scratch = pl.create_tensor([rows, 64], dtype=pl.FP32)
        scratch = _double(a, blocks, scratch)
        o = _double(scratch, blocks, o)
        return o


def test_a_dynamic_program_is_a_template_parsed_per_call_shape():
    assert isinstance(Doubler, pl.ProgramTemplate)
    small = Doubler.specialize_for(torch.zeros(32, 64), torch.zeros(32, 64))
    large = Doubler.specialize_for(torch.zeros(64, 64), torch.zeros(64, 64))
    assert small is Doubler.specialize_for(torch.ones(32, 64), torch.ones(32, 64))
    assert small.function("main").params[0].var.type.shape == (32, 64)
    assert large.function("main").params[0].var.type.shape == (64, 64)
    assert "create_tensor([64, 64]" in large.as_python()


@pytest.mark.parametrize("rows", [32, 48])
def test_dimensions_read_as_the_call_sizes_as_upstream_reads_them_at_run_time(rows):
    a, o = torch.randn(rows, 64), torch.zeros(rows, 64)
    program = Doubler.specialize_for(a, o)
    load_entry(torch_codegen(program), program.entry)(a, o)
    assert torch.equal(o, a * 4)


def test_run_specialises_builds_and_runs_a_dynamic_program():
    a, o = torch.randn(32, 64), torch.zeros(32, 64)
    run(Doubler, a, o)
    assert torch.equal(o, a * 4)


def test_compile_needs_the_specialised_program():
    with pytest.raises(TypeError, match="specialize_for"):
        ir.compile(Doubler)


def test_a_kernel_tensor_carried_in_place_is_the_tensor_itself():
    program = Doubler.specialize_for(torch.zeros(32, 64), torch.zeros(32, 64))
    kernel = next(f for f in program.functions.values() if f.name.startswith("twice"))
    text = kernel.as_python()
    assert "acc" not in text and "result" not in text  # no copies of the tensor


def test_a_dynamic_dimension_bound_to_two_sizes_is_an_error():
    with pytest.raises(TypeCheckError, match="`ROWS` is 32 and 48"):
        Doubler.specialize_for(torch.zeros(32, 64), torch.zeros(48, 64))


def test_a_kernel_carry_must_yield_the_tensor_it_writes():
    @pl.function(type=pl.FunctionType.InCore)
    def swap(a: pl.Tensor[[ROWS, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]) -> pl.Tensor[[ROWS, 64], pl.FP32]:
        for _i, (_acc,) in pl.range(2, init_values=(o,)):
            result = pl.yield_(a)
        return result

    @pl.program
    class Swap:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[ROWS, 64], pl.FP32],
                 o: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]) -> pl.Tensor[[ROWS, 64], pl.FP32]:
            o = swap(a, o)
            return o

    with pytest.raises(ir.errors.ParseError, match="writes in place"):
        Swap.specialize_for(torch.zeros(16, 64), torch.zeros(16, 64))
