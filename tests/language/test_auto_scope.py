"""Upstream's `auto_scope=False` (its Memory page: the compiler places none of the
function's runtime scopes, the author does with `pl.scope()`; which ring a task takes is
tests/runtime/test_rings.py's).  An orchestration, inline or program function takes it and
computes what it computes without it; an InCore / Opaque kernel has no orchestration body
for a scope and is refused at its decorator's line, as upstream."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError
from pypto.runtime import RunConfig

N, TR, TC = 4, 16, 128


@pl.jit(auto_scope=False)
def manual_placement(a: pl.Tensor[[N * TR, TC], pl.FP32],
                     out: pl.Out[pl.Tensor[[N * TR, TC], pl.FP32]]):
    with pl.scope():
        for i in pl.range(N):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [i * TR, 0], [TR, TC])
                pl.store(pl.mul(t, 2.0), [i * TR, 0], out)
        with pl.scope():  # noqa: SIM117 - upstream nests them (its Memory page)
            with pl.at(level=pl.Level.CORE_GROUP):
                for i in pl.range(N):
                    t = pl.load(out, [i * TR, 0], [TR, TC])
                    pl.store(pl.add(t, 1.0), [i * TR, 0], out)
    return out


@pl.jit.inline(auto_scope=False)
def twice(a: pl.Tensor[[TR, TC], pl.FP32], out: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.mul(pl.load(a, [0, 0], [TR, TC]), 2.0), [0, 0], out)
    return out


@pl.jit
def calls_inline(a: pl.Tensor[[TR, TC], pl.FP32], out: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]):
    out = twice(a, out)
    return out


def test_an_entry_without_auto_scopes_runs_its_phases_in_order(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))
    a, out = torch.randn(N * TR, TC), torch.zeros(N * TR, TC)
    manual_placement(a, out, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(out, a * 2.0 + 1.0)


def test_an_inline_helper_takes_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))
    a, out = torch.randn(TR, TC), torch.zeros(TR, TC)
    calls_inline(a, out, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(out, a * 2.0)


def test_a_program_function_takes_it():
    @pl.program
    class Program:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[TR, TC], pl.FP32],
              out: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]) -> pl.Tensor[[TR, TC], pl.FP32]:
            out = pl.store(pl.load(a, [0, 0], [TR, TC]), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)
        def main(self, a: pl.Tensor[[TR, TC], pl.FP32],
                 out: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]) -> pl.Tensor[[TR, TC], pl.FP32]:
            with pl.scope():
                out = self.k(a, out)
            return out

    assert [f.name for f in Program.functions] == ["k", "main"]


@pytest.mark.parametrize("decorator", ["pl.jit.incore", "pl.jit.opaque"])
def test_a_kernel_refuses_it_at_its_line(decorator):
    with pytest.raises(ParseError, match="no orchestration body") as info:
        eval(f"{decorator}(auto_scope=False)")  # noqa: S307 - the decorator under test
    assert info.value.span.line is not None


def test_a_program_kernel_refuses_it():
    with pytest.raises(ParseError, match="an InCore function is a kernel") as info:
        pl.function(type=pl.FunctionType.InCore, auto_scope=False)
    assert info.value.span.file == __file__


def test_auto_scope_is_a_bool():
    with pytest.raises(ParseError, match="True or False"):
        pl.jit(auto_scope="no")
