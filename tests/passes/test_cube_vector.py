"""Mixed cube/vector pl.at blocks: a tensor-level matmul and vector work in one kernel (the
value through global memory), and pl.split asking for the cross-core pipe instead
(test_expand_mixed_kernel.py has that pipe's structure)."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.ir.errors import LoweringError, ParseError

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")  # small tiles


@pl.jit
def matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


@pl.jit
def matmul_bias_up_down(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


@pl.jit
def matmul_bias_left_right(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)]):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


def _operands(rows=32):
    torch.manual_seed(0)
    return (torch.randn(rows, 64, dtype=torch.float16), torch.randn(64, 32, dtype=torch.float16),
            torch.randn(rows, 32), torch.zeros(rows, 32))


@pytest.mark.parametrize("kernel", [matmul_bias, matmul_bias_up_down, matmul_bias_left_right])
def test_a_matmul_and_its_vector_consumer_share_one_block(kernel):
    a, b, bias, out = _operands()
    kernel(a, b, bias, out)
    expected = a.float() @ b.float() + bias
    assert torch.allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_the_matmul_result_reaches_the_vector_work_through_a_scratch_tensor():
    program = matmul_bias.lower(*_operands())
    kernel = next(f for f in program.functions if f.name != program.entry)
    assert [p.var.name for p in kernel.params][-1] == "acc"
    text = program.as_python()
    assert "acc = pl.store(" in text.replace(": pl.Tensor[[32, 32], pl.FP32]", "")
    assert "pl.create_tensor([32, 32], pl.FP32)" in text


def test_a_split_kernel_prints_its_attribute_and_parses_back():
    for program in (matmul_bias_up_down.frontend(*_operands()),
                    matmul_bias_up_down.lower(*_operands())):
        text = program.as_python()
        assert "pl.split(pl.SplitMode.UP_DOWN)" in text or "pl.func_attr(" in text
        assert pl.parse(text) == program


def test_split_of_an_odd_axis_is_a_located_error():
    a, b, bias, out = _operands(rows=31)
    with pytest.raises(LoweringError, match="has 31 rows") as info:
        matmul_bias_up_down.lower(a, b, bias, out)
    assert info.value.span.file.endswith("test_cube_vector.py")


@pl.jit
def chained(a: pl.Tensor, b: pl.Tensor, e: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.matmul(a, b, out_dtype=pl.FP32)
        cb = pl.cast(c, pl.BF16, mode="rint")
        d = pl.matmul(cb, e, out_dtype=pl.FP32)
        out = pl.assemble(out, d, [0, 0])
    return out


def test_a_cast_between_two_matmuls_runs_on_the_vector_unit_between_them():
    torch.manual_seed(1)
    a, b = torch.randn(32, 64, dtype=torch.bfloat16), torch.randn(64, 32, dtype=torch.bfloat16)
    e, out = torch.randn(32, 16, dtype=torch.bfloat16), torch.zeros(32, 16)
    chained(a, b, e, out)
    c_bf16 = (a.float() @ b.float()).to(torch.bfloat16).float()
    assert torch.allclose(out, c_bf16 @ e.float(), rtol=1e-5, atol=1e-4)


def test_func_attr_after_another_statement_is_an_error():
    source = '''
import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        t = pl.load(x, [0, 0], [16, 16])
        pl.func_attr({"split": pl.SplitMode.UP_DOWN})
        out = pl.store(t, [0, 0], out)
        return out
'''
    with pytest.raises(ParseError, match="first statement"):
        pl.parse(source)
