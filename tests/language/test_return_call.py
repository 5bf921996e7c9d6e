"""`return kernel(x, out)`: the kernel call in a return is submitted like any other call
(upstream's language guide, Types page: `return rows(x, out)` from a @pl.jit entry).  It was
dropped, and the entry handed back an output buffer no task wrote: a silent wrong answer."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

N = pl.dynamic("N")


@pl.jit.incore
def double(x: pl.Tensor[[N, 128], pl.FP32], out: pl.Out[pl.Tensor[[N, 128], pl.FP32]]):
    out = pl.store(pl.mul(pl.load(x, [0, 0], [16, 128]), 2.0), [0, 0], out)
    return out


@pl.jit.incore
def split(x: pl.Tensor[[16, 128], pl.FP32], lo: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
          hi: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    lo = pl.store(pl.mul(t, 2.0), [0, 0], lo)
    hi = pl.store(pl.add(t, 1.0), [0, 0], hi)
    return lo, hi


@pl.jit
def returns_the_call(x: pl.Tensor[[N, 128], pl.FP32],
                     out: pl.Out[pl.Tensor[[N, 128], pl.FP32]]):
    return double(x, out)


@pl.jit
def returns_both_results(x: pl.Tensor[[16, 128], pl.FP32],
                         lo: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
                         hi: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    return split(x, lo, hi)


@pl.program
class ReturnsTheCall:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[16, 128], pl.FP32],
               out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
        out = pl.store(pl.mul(pl.load(x, [0, 0], [16, 128]), 3.0), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 128], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
        return self.kernel(x, out)


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))
    return RunConfig(platform="a2a3sim")


@pytest.mark.parametrize("rows", [16, 48])
def test_a_returned_kernel_call_runs(config, rows):
    x = torch.randn(rows, 128)
    out = torch.full((rows, 128), -7.0)
    returns_the_call(x, out, config=config)
    assert torch.equal(out[:16], x[:16] * 2.0)
    assert torch.isnan(out[16:]).all()  # an Out's unwritten rows: the device's poison


def test_a_returned_call_with_two_results_runs_once(config):
    x = torch.randn(16, 128)
    lo, hi = torch.zeros(16, 128), torch.zeros(16, 128)
    returns_both_results(x, lo, hi, config=config)
    assert torch.equal(lo, x * 2.0) and torch.equal(hi, x + 1.0)
    main = returns_both_results.frontend(x, lo, hi).function("returns_both_results")
    assert len([s for s in main.body if type(s).__name__ == "Assign"]) == 1


def test_a_program_returning_a_call_runs_and_round_trips(config):
    from pypto import ir
    x, out = torch.randn(16, 128), torch.zeros(16, 128)
    ir.compile(ReturnsTheCall, platform="a2a3sim")(x, out)
    assert torch.equal(out, x * 3.0)
    text = ReturnsTheCall.as_python()
    assert "ret_0 = self.kernel(x, out)" in text.replace(": pl.Tensor[[16, 128], pl.FP32]", "")
    assert pl.parse(text) == ReturnsTheCall
