"""Programs as files: `Program.as_python()` written out and read back with upstream's
`pl.loads_program(path)` (a `@pl.program` class) and `pl.loads(path)` (a program or a
standalone function); errors name the file and its line."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError
from pypto.ir.errors import ParseContentError
from pypto.ir.nodes import Function, Program


@pl.jit
def scaled(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.mul(pl.load(x, [0, 0], [16, 128]), 3.0), [0, 0], out)
    return out


def _program() -> Program:
    return scaled.frontend(torch.zeros(16, 128), torch.zeros(16, 128))


def test_a_program_written_to_a_file_reads_back_equal(tmp_path):
    path = tmp_path / "scaled.py"
    path.write_text(_program().as_python())
    assert pl.loads_program(path) == _program()
    assert pl.loads_program(str(path)) == _program()
    assert pl.loads(str(path)) == _program()


def test_a_file_holding_a_function_is_not_a_program(tmp_path):
    path = tmp_path / "one.py"
    path.write_text("@pl.function(type=pl.FunctionType.InCore)\n"
                    "def k(x: pl.Tensor[[16, 128], pl.FP32]):\n    return x\n")
    assert isinstance(pl.loads(str(path)), Function)
    with pytest.raises(ParseContentError, match="standalone @pl.function") as info:
        pl.loads_program(path)
    assert info.value.span.file == str(path) and "pl.loads(path)" in info.value.hint


def test_a_missing_file_and_a_bad_line_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no file .*missing.py"):
        pl.loads_program(tmp_path / "missing.py")
    path = tmp_path / "bad.py"
    text = _program().as_python().replace("pl.mul(", "pl.no_such_op(", 1)
    path.write_text(text)
    with pytest.raises(ParseError) as info:
        pl.loads_program(path)
    assert info.value.span.file == str(path)
    assert "pl.no_such_op(" in text.splitlines()[info.value.span.line - 1]
