"""IR nodes compare and hash by structure; the printer's text parses back to an equal program."""

from __future__ import annotations

import torch

import pypto.language as pl
from pypto.ir import Const, DataType, Program, ScalarType, TensorType, Var
from pypto.ir.errors import Span


def test_equal_nodes_hash_equal_and_spans_do_not_matter():
    t = TensorType((16, 128), DataType.FP32)
    a = Var("x", t, Span("a.py", 1))
    b = Var("x", t, Span("b.py", 99))
    assert a == b and hash(a) == hash(b)
    assert Var("y", t) != a
    assert Var("x", TensorType((16, 64), DataType.FP32)) != a


def test_constants_differ_by_dtype():
    assert Const(1, ScalarType(DataType.INT64)) != Const(1, ScalarType(DataType.INT32))


@pl.jit
def scaled(a: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, 3.0)
    return out


def _program() -> Program:
    return scaled.frontend(torch.zeros(32, 128), torch.zeros(32, 128))


def test_printed_program_parses_back_equal_and_with_the_same_hash():
    program = _program()
    again = pl.parse(program.as_python())
    assert again == program and hash(again) == hash(program)
    assert again.as_python() == program.as_python()


def test_programs_are_usable_as_dict_keys():
    cache = {_program(): "built"}
    assert cache[_program()] == "built"
