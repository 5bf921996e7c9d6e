"""Window extents fold when the bounds are affine in the same loop variables:
`x[i * R:(i + 1) * R, :]` is an R-row window, `x[i:j]` with unrelated bounds is refused."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.ir.errors import ParseError

BLOCKS, R, C = 4, 8, 128


@pl.jit
def blocks(x: pl.Tensor[[BLOCKS * R, C], pl.FP32],
           out: pl.Out[pl.Tensor[[BLOCKS * R, C], pl.FP32]]):
    for i in pl.parallel(BLOCKS):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[i * R:(i + 1) * R, :] = pl.add(x[(i + 1) * R - R:R + i * R, :], 1.0)
    return out


@pl.jit
def ragged(x: pl.Tensor[[BLOCKS * R, C], pl.FP32],
           out: pl.Out[pl.Tensor[[BLOCKS * R, C], pl.FP32]]):
    for i in pl.parallel(BLOCKS):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[i * R:(i + 1) * R, :] = pl.add(x[i * R:i * (R + 1), :], 1.0)
    return out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_affine_window_bounds_give_constant_extents(platform):
    from pypto.runtime import RunConfig

    x, out = torch.randn(BLOCKS * R, C), torch.zeros(BLOCKS * R, C)
    blocks(x, out, config=RunConfig(platform=platform))
    assert torch.equal(out, x + 1.0)


def test_bounds_whose_difference_depends_on_the_loop_variable_are_refused():
    x, out = torch.randn(BLOCKS * R, C), torch.zeros(BLOCKS * R, C)
    with pytest.raises(ParseError, match="constant, positive extent") as info:
        ragged.lower(x, out)
    assert f"{__file__}:{ragged.fn.__code__.co_firstlineno + 5}" in str(info.value)
