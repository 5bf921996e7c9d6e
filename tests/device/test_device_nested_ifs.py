"""A run-time `if` nested in another's branch, as upstream's kernel_online_update
(models/04_paged_attention) nests `if is_last` in `if is_first`: its own
`pipe_barrier(PIPE_ALL)` before it (after its join) is left out where only scalar code lies
between it and the enclosing branch's start (end), whose barriers order the same
instructions; proven on pto-isa's CPU model against the simulators."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


@pl.jit.incore
def nested(x: pl.Tensor[[16, 128], pl.FP32], first: pl.Scalar[pl.BOOL],
           last: pl.Scalar[pl.BOOL], n: pl.Scalar[pl.INDEX],
           out: pl.InOut[pl.Tensor[[16, 128], pl.FP32]],
           dst: pl.InOut[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    if first:
        k = n + 1  # scalar code only before the nested `if`: no barrier of its own
        if last:
            dst = pl.store(pl.mul(t, pl.cast(k, pl.FP32)), [0, 0], dst)
        else:
            dst = pl.store(pl.full([16, 128], dtype=pl.FP32, value=0.0), [0, 0], dst)
    else:
        out = pl.store(pl.add(t, 1.0), [0, 0], out)  # pipe work before: its barrier stays
        if last:
            dst = pl.store(pl.sub(t, 2.0), [0, 0], dst)
    return out, dst


def _arguments(first: bool, last: bool):
    def make():
        x = torch.randn(16, 128, generator=torch.Generator().manual_seed(3))
        return [x, first, last, 4, torch.full((16, 128), -1.0), torch.full((16, 128), -3.0)]
    return make


def _lines(first=True, last=True) -> list[str]:
    (fn,) = [f for f in lower(nested.frontend(*_arguments(first, last)()),
                              get_platform("a2a3cpu")).functions
             if f.func_type is FunctionType.InCore]
    return [ln.strip() for ln in device_kernel(fn).cpp.splitlines()]


def test_a_nested_if_next_to_its_enclosing_barriers_has_none_of_its_own():
    lines = _lines()
    ifs = [i for i, ln in enumerate(lines) if ln.startswith("if (")]
    assert len(ifs) == 3
    outer, first_inner, second_inner = ifs
    barrier = "pipe_barrier(PIPE_ALL);"
    assert lines[outer - 1] == barrier
    # The first nested `if`: only the scalar k before it, nothing after its join.
    assert barrier not in lines[outer:first_inner]
    else_at = next(i for i in range(first_inner, second_inner) if lines[i] == "} else {"
                   and lines[i - 1] == "}")
    assert barrier not in lines[first_inner:else_at]
    # The second: a store before it (its barrier stays), nothing after its join.
    assert lines[second_inner - 1] == barrier
    assert lines[second_inner + 1:].count(barrier) == 1  # the outer join's
    assert lines.count(barrier) == 3


# Slow: a CPU-model build and a simulator build per case.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
@pytest.mark.parametrize(("first", "last"), [(True, True), (True, False), (False, True)])
def test_nested_ifs_on_the_cpu_model_are_the_simulators(platform, first, last):
    out, dst = outputs_agreeing_with_the_simulator(nested, _arguments(first, last), 4,
                                                   platform)
    x = _arguments(first, last)()[0]
    if first:
        assert torch.equal(out, torch.full((16, 128), -1.0))
        assert torch.equal(dst, x * 5.0 if last else torch.zeros(16, 128))
    else:
        assert torch.equal(out, x + 1.0) and torch.equal(dst, x - 2.0)
