"""Bad programs fail at compile time with the user's file:line and what to do."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.ir import ParseError, TypeCheckError
from pypto.runtime import RunConfig

HERE = __file__


def _line_of(fn, offset: int) -> str:
    return f"{HERE}:{fn.fn.__code__.co_firstlineno + offset}"


@pl.jit
def op_outside_scope(a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.exp(a)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = t
    return out


def test_operator_outside_pl_at_names_the_line():
    with pytest.raises(ParseError) as info:
        op_outside_scope(torch.zeros(16, 128), torch.zeros(16, 128))
    message = str(info.value)
    assert message.startswith(_line_of(op_outside_scope, 2))
    assert "pl.at" in message


@pl.jit
def mismatched(a: pl.Tensor[[16, 128], pl.FP32], b: pl.Tensor[[32, 128], pl.FP32],
               out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


def test_shape_mismatch_names_the_line_and_both_shapes():
    with pytest.raises(TypeCheckError) as info:
        mismatched(torch.zeros(16, 128), torch.zeros(32, 128), torch.zeros(16, 128))
    message = str(info.value)
    assert message.startswith(_line_of(mismatched, 4))
    assert "[16, 128]" in message and "[32, 128]" in message


@pl.jit
def exp_of_int(a: pl.Tensor[[16, 128], pl.INT32], out: pl.Out[pl.Tensor[[16, 128], pl.INT32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a)
    return out


def test_operator_on_unsupported_dtype_names_the_line():
    with pytest.raises(TypeCheckError) as info:
        exp_of_int(torch.zeros(16, 128, dtype=torch.int32), torch.zeros(16, 128, dtype=torch.int32))
    message = str(info.value)
    assert message.startswith(_line_of(exp_of_int, 3))
    assert "INT32" in message and "pl.cast" in message


@pl.jit
def any_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


def test_argument_of_unsupported_dtype_names_the_parameter():
    x = torch.zeros(16, 128, dtype=torch.float64)
    with pytest.raises(TypeCheckError) as info:
        any_add(x, x, x)
    message = str(info.value)
    assert message.startswith(f"{HERE}:")
    assert "float64" in message and "a:" in message.replace("argument a", "a:")


def test_annotation_mismatch_at_call_names_the_parameter():
    with pytest.raises(TypeCheckError) as info:
        mismatched(torch.zeros(16, 64), torch.zeros(32, 128), torch.zeros(16, 128))
    assert "`a`" in str(info.value) and "[16, 64]" in str(info.value)


@pytest.mark.parametrize("make", [
    lambda: RunConfig(platform="a3sim"),
    lambda: ir.compile(any_add.frontend(torch.zeros(4, 4), torch.zeros(4, 4), torch.zeros(4, 4)),
                       platform="a3sim"),
])
def test_unknown_platform_lists_the_four(make):
    with pytest.raises(ValueError) as info:
        make()
    for name in ("a2a3sim", "a5sim", "a2a3", "a5"):
        assert name in str(info.value)


def test_unknown_compile_keyword_is_a_type_error():
    with pytest.raises(TypeError):
        RunConfig(platfrom="a2a3sim")
    with pytest.raises(TypeError):
        any_add.compile(torch.zeros(4, 4), torch.zeros(4, 4), torch.zeros(4, 4), dump=True)
