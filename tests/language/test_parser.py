"""The DSL parser: decorators, folding, specialisation, sugar, the @pl.program form."""

from __future__ import annotations

import torch

import pypto.language as pl
from pypto.ir import Direction, FunctionType, TensorType
from pypto.ir.dtypes import DataType
from pypto.runtime import RunConfig, run

ROWS = 32
SCALE = 0.5


@pl.jit
def folded(a: pl.Tensor[[ROWS, 128], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, SCALE * 2)
    return out


def test_enclosing_scope_constants_are_folded():
    program = folded.frontend(torch.zeros(ROWS, 128), torch.zeros(ROWS, 128))
    text = program.as_python()
    assert "pl.mul(a, 1.0)" in text and "[32, 128]" in text


def test_closure_constants_are_folded():
    cols = 64

    @pl.jit
    def inner(a: pl.Tensor[[16, cols], pl.FP32], out: pl.Out[pl.Tensor[[16, cols], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, cols)
        return out

    text = inner.frontend(torch.zeros(16, 64), torch.zeros(16, 64)).as_python()
    assert "[16, 64]" in text and "pl.add(a, 64)" in text


@pl.jit
def bare(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


def test_bare_tensors_are_specialised_from_the_arguments():
    p16 = bare.frontend(*(torch.zeros(16, 128, dtype=torch.float16) for _ in range(3)))
    p32 = bare.frontend(*(torch.zeros(8, 256) for _ in range(3)))
    t16 = p16.entry_function.params[0].var.type
    t32 = p32.entry_function.params[0].var.type
    assert t16 == TensorType((16, 128), DataType.FP16)
    assert t32 == TensorType((8, 256), DataType.FP32)
    assert p16.entry_function.params[2].direction is Direction.Out


@pl.jit
def dynamic_rows(a: pl.Tensor[[pl.dynamic("M"), 128], pl.FP32],
                 out: pl.Out[pl.Tensor[[pl.dynamic("M"), 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a)
    return out


def test_dynamic_dimensions_take_the_arguments_size():
    a = torch.randn(48, 128)
    out = torch.zeros(48, 128)
    dynamic_rows(a, out)
    assert torch.allclose(out, torch.exp(a), rtol=1e-6)


@pl.jit
def windows(a: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[0:32, :] = pl.add(a, 1.0)
        out[32:64, 0:128] = pl.sub(a, 1.0)
    return out


def test_sliced_assignment_writes_windows():
    a = torch.randn(32, 128)
    out = torch.zeros(64, 128)
    windows(a, out, config=RunConfig(platform="a5sim"))
    assert torch.equal(out[:32], a + 1) and torch.equal(out[32:], a - 1)


@pl.jit.incore
def unrolled(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    for k in pl.unroll(4):
        t = pl.load(a, [k * 16, 0], [16, 128])
        out = pl.store(pl.add(t, k), [k * 16, 0], out)
    return out


def test_unroll_repeats_the_body_with_constants():
    a = torch.zeros(64, 128)
    text = unrolled.frontend(a, torch.zeros(64, 128)).as_python()
    assert "for " not in text and text.count("pl.load(") == 4
    assert "pl.load(a, [48, 0], [16, 128])" in text
    out = torch.zeros(64, 128)
    unrolled(a, out)
    assert torch.equal(out[:, 0], torch.arange(4.0).repeat_interleave(16))


def test_operator_sugar_on_tensors():
    @pl.jit
    def sugar(a: pl.Tensor[[16, 128], pl.FP32], b: pl.Tensor[[16, 128], pl.FP32],
              out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = (a + b) * 2.0 - a / b
        return out

    a, b = torch.rand(16, 128) + 1, torch.rand(16, 128) + 1
    out = torch.zeros(16, 128)
    sugar(a, b, out)
    assert torch.equal(out, (a + b) * 2.0 - a / b)


@pl.program
class Printed:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[16, 128], pl.FP32],
               out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
        t: pl.Tile[[16, 128], pl.FP32] = pl.load(x, [0, 0], [16, 128])
        u: pl.Tile[[16, 128], pl.FP32] = pl.exp(t)
        out: pl.Tensor[[16, 128], pl.FP32] = pl.store(u, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 128], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
        out: pl.Tensor[[16, 128], pl.FP32] = self.kernel(x, out)
        return out


def test_program_class_form_parses_and_compiles(tmp_path):
    from pypto import ir

    assert Printed.entry == "main"
    assert [f.func_type for f in Printed.functions] == [FunctionType.InCore,
                                                         FunctionType.Orchestration]
    compiled = ir.compile(Printed, output_dir=tmp_path / "printed", platform="a5sim")
    x = torch.randn(16, 128)
    out = torch.zeros(16, 128)
    compiled(x, out)
    assert torch.allclose(out, torch.exp(x), rtol=1e-6)
    assert pl.parse(Printed.as_python()) == Printed


def test_op_stubs_refuse_to_run_as_python():
    import pytest

    with pytest.raises(RuntimeError, match="compiled, not executed"):
        pl.add(1, 2)


@pl.program
class two_results:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[16, 128], pl.FP32], a: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
               b: pl.Out[pl.Tensor[[16, 128], pl.FP32]]
               ) -> pl.Tuple[pl.Tensor[[16, 128], pl.FP32], pl.Tensor[[16, 128], pl.FP32]]:
        t = pl.load(x, [0, 0], [16, 128])
        a = pl.store(pl.add(t, 1.0), [0, 0], a)
        b = pl.store(pl.mul(t, 2.0), [0, 0], b)
        return a, b

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 128], pl.FP32], a: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
             b: pl.Out[pl.Tensor[[16, 128], pl.FP32]]
             ) -> pl.Tuple[pl.Tensor[[16, 128], pl.FP32], pl.Tensor[[16, 128], pl.FP32]]:
        a, b = self.kernel(x, a, b)
        return a, b


def test_pl_tuple_annotates_several_results_as_tuple_does():
    # Upstream's `pl.Tuple[T1, T2]` return annotation is `tuple[T1, T2]`: printed that way.
    assert [len(f.returns) for f in two_results.functions] == [2, 2]
    assert pl.parse(two_results.as_python()) == two_results
    x, a, b = torch.randn(16, 128), torch.zeros(16, 128), torch.zeros(16, 128)
    run(two_results, x, a, b)
    assert torch.equal(a, x + 1.0) and torch.equal(b, x * 2.0)
