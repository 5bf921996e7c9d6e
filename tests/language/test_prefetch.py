"""Upstream's asynchronous GM -> L2 prefetch, `pl.prefetch.*`: a cache hint that changes no
value.  The simulators model no L2 cache (as pto-isa's CPU model, whose TPREFETCH_ASYNC is
a no-op), so a kernel computes the same with the hints as without them and `wait` is true;
device code, which would need an SDMA workspace from the runtime, refuses them at the line."""

from __future__ import annotations

import pytest
import torch
from located_errors import raised_by

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir import LoweringError, TypeCheckError
from pypto.ir.types import FunctionType
from pypto.platform import get_platform
from pypto.runtime import RunConfig

N = 2048


@pl.jit.incore
def warmed(x: pl.Tensor[[1, N], pl.FP32], out: pl.Out[pl.Tensor[[1, N], pl.FP32]]):
    ctx = pl.prefetch.make_context()
    evt = pl.prefetch.async_prefetch(x, ctx)
    session = pl.prefetch.session(ctx)
    pl.prefetch.wait(evt, session)
    t = pl.load(x, [0, 0], [1, N])
    out = pl.store(pl.mul(t, 2.0), [0, 0], out)
    return out


@pl.jit
def warmed_in_a_block(x: pl.Tensor[[1, N], pl.FP32], out: pl.Out[pl.Tensor[[1, N], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ctx = pl.prefetch.make_context()
        evt = pl.prefetch.async_prefetch(x, ctx)
        done = pl.prefetch.wait(evt, pl.prefetch.session(ctx))
        t = pl.load(x, [0, 0], [1, N])
        if done:  # noqa: SIM108 - the DSL's runtime `if`
            t2 = pl.yield_(pl.add(t, 1.0))
        else:
            t2 = pl.yield_(t)
        pl.store(t2, [0, 0], out)
    return out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_the_hints_change_no_value_and_wait_is_true(platform):
    x = torch.randn(1, N)
    out, out2 = torch.zeros(1, N), torch.zeros(1, N)
    warmed(x, out, config=RunConfig(platform=platform))
    assert torch.equal(out, x * 2.0)
    warmed_in_a_block(x, out2, config=RunConfig(platform=platform))
    assert torch.equal(out2, x + 1.0)


def test_the_handles_print_and_read_back():
    x, out = torch.zeros(1, N), torch.zeros(1, N)
    program = warmed.frontend(x, out)
    text = program.as_python()
    assert "ctx: pl.PrefetchAsyncContext = pl.prefetch.make_context()" in text
    assert "evt: pl.AsyncEvent = pl.prefetch.async_prefetch(x, ctx)" in text
    assert "session: pl.AsyncSession = pl.prefetch.session(ctx)" in text
    assert pl.parse(text) == program


def test_device_code_refuses_them_at_the_line():
    x, out = torch.zeros(1, N), torch.zeros(1, N)
    (fn,) = [f for f in lower(warmed.frontend(x, out), get_platform("a2a3cpu")).functions
             if f.func_type is FunctionType.InCore]
    with pytest.raises(LoweringError, match="SDMA workspace") as info:
        device_kernel(fn)
    assert info.value.span.line == warmed.fn.__code__.co_firstlineno + 2  # make_context


_KERNEL = ("import pypto.language as pl\n\n"
           "@pl.jit.incore\n"
           "def k(x: pl.Tensor[[{shape}], pl.FP32], out: pl.Out[pl.Tensor[[{shape}], pl.FP32]]):\n"
           "    ctx = pl.prefetch.make_context()\n"
           "{line}\n"
           "    out = pl.store(pl.load(x, [0, 0], [{shape}]), [0, 0], out)\n"
           "    return out\n")


@pytest.mark.parametrize("shape, line, message", [
    ("16, 128", "    e = pl.prefetch.async_prefetch(x, ctx)", "flat contiguous tensor"),
    ("1, 128", "    e = pl.prefetch.async_prefetch(ctx, ctx)", "pulls a tensor"),
    ("1, 128", "    e = pl.prefetch.async_prefetch(x, pl.prefetch.session(ctx))",
     "takes pl.PrefetchAsyncContext"),
    ("1, 128", "    e = pl.prefetch.wait(ctx, pl.prefetch.session(ctx))", "takes pl.AsyncEvent"),
])
def test_a_wrong_operand_is_refused_at_its_line(shape, line, message):
    source = _KERNEL.format(shape=shape, line=line)
    rows, cols = (int(d) for d in shape.split(", "))
    error, lines = raised_by(source, lambda ns: ns["k"].frontend(
        torch.zeros(rows, cols), torch.zeros(rows, cols)), TypeCheckError)
    assert message in str(error)
    assert "pl.prefetch" in lines[error.span.line - 1]
