"""A bare `pl.store(...)` / `pl.assemble(...)` statement writes its tensor (upstream's idiom)."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.ir import Assign, Call
from pypto.ir.errors import ParseError


@pl.jit
def bare_store(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        tile_a = pl.load(a, [0, 0], [32, 128])
        tile_b = pl.load(b, [0, 0], [32, 128])
        pl.store(pl.add(tile_a, tile_b), [0, 0], c)
    return c


def test_a_bare_store_writes_the_output():
    a, b, c = torch.randn(32, 128), torch.randn(32, 128), torch.zeros(32, 128)
    bare_store(a, b, c)
    assert torch.equal(c, a + b)


def test_a_bare_store_is_carried_as_the_rebinding_of_its_tensor():
    program = bare_store.frontend(*(torch.zeros(32, 128) for _ in range(3)))
    scope = program.entry_function.body[0]
    store = scope.body[-1]
    assert isinstance(store, Assign) and isinstance(store.value, Call)
    assert store.value.op == "store" and [t.name for t in store.targets] == ["c"]
    assert "= pl.store(" in program.as_python()
    assert pl.parse(program.as_python()) == program


@pl.jit.incore
def bare_store_loop(a: pl.Tensor[[256, 128], pl.FP32], c: pl.Out[pl.Tensor[[256, 128], pl.FP32]]):
    for i in pl.range(4):
        t = pl.load(a, [i * 64, 0], [64, 128])
        pl.store(pl.mul(t, 2.0), [i * 64, 0], c)
    return c


def test_bare_stores_in_a_kernel_loop_write_every_window():
    a, c = torch.randn(256, 128), torch.zeros(256, 128)
    bare_store_loop(a, c)
    assert torch.equal(c, a * 2.0)


@pl.jit
def bare_assemble(a: pl.Tensor[[32, 128], pl.FP32], c: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.assemble(c, pl.add(a, 1.0), [0, 0])
        pl.assemble(c, pl.sub(a, 1.0), [32, 0])
    return c


def test_a_bare_assemble_writes_its_window():
    a, c = torch.randn(32, 128), torch.zeros(64, 128)
    bare_assemble(a, c)
    assert torch.equal(c, torch.cat([a + 1.0, a - 1.0]))


@pl.jit.incore
def store_into_a_window(a: pl.Tensor[[32, 128], pl.FP32],
                        c: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    pl.store(pl.load(a, [0, 0], [32, 128]), [0, 0], c[0:32, :])
    return c


def test_a_bare_store_into_an_expression_is_a_located_error():
    with pytest.raises(ParseError, match="not a tensor variable") as info:
        store_into_a_window.frontend(torch.zeros(32, 128), torch.zeros(64, 128))
    assert info.value.span.file.endswith("test_bare_writes.py")
