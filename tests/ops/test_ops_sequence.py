"""Upstream's integer sequence pl.tensor.ci / pl.tensor.arange and pl.tile.ci (the PTO
instruction TCI): [1, n] consecutive integers from start, ascending or descending, INT16 or
INT32, wrapping at the type's ends; a tensor value cut into column chunks continues the
sequence in each chunk.  Both simulators against torch.arange."""

from __future__ import annotations

import re

import pytest
import torch
from located_errors import raised_by

import pypto.language as pl
from pypto.debug.torch_runtime import reference
from pypto.ir import TypeCheckError
from pypto.runtime import RunConfig

pytestmark = [pytest.mark.small_tiles,
              pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")]

PLATFORMS = ["a2a3sim", "a5sim"]
N = 64


def _wrap(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    bits = torch.iinfo(dtype).bits
    return ((values + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)).to(dtype)


@pl.jit.incore
def tiles(start: pl.Scalar[pl.INT32], up: pl.Out[pl.Tensor[[1, N], pl.INT32]],
          down: pl.Out[pl.Tensor[[1, N], pl.INT32]], short: pl.Out[pl.Tensor[[1, N], pl.INT16]],
          clamped: pl.Out[pl.Tensor[[1, N], pl.INT16]]):
    up = pl.store(pl.tile.ci(start, [1, N]), [0, 0], up)
    down = pl.store(pl.ci(start, [1, N], pl.INT32, True), [0, 0], down)
    short = pl.store(pl.tile.ci(32748, [1, N], dtype=pl.INT16), [0, 0], short)
    clamped = pl.store(pl.tile.ci(-100000, [1, N], pl.INT16, descending=True), [0, 0], clamped)
    return up, down, short, clamped


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_tile_sequence_ascends_descends_and_wraps(platform):
    j = torch.arange(N)
    for start in (0, -7, 2**31 - 10):
        outs = [torch.empty(1, N, dtype=torch.int32), torch.empty(1, N, dtype=torch.int32),
                torch.empty(1, N, dtype=torch.int16), torch.empty(1, N, dtype=torch.int16)]
        tiles(start, *outs, config=RunConfig(platform=platform))
        up, down, short, clamped = (o[0] for o in outs)
        assert torch.equal(up, _wrap(start + j, torch.int32)), start  # past INT32's max: wraps
        assert torch.equal(down, _wrap(start - j, torch.int32)), start
        assert torch.equal(short, _wrap(2**15 - 20 + j, torch.int16))
        # A start outside INT16 is converted as every scalar operand is: saturated first.
        assert torch.equal(clamped, _wrap(-2**15 - j, torch.int16))
    assert torch.equal(reference("ci")(-2**15, [1, N], "INT16", True)[0],
                       _wrap(-2**15 - j, torch.int16))


@pl.jit
def tensors(x: pl.Tensor[[16, 128], pl.INT32], start: pl.Scalar[pl.INT32],
            seq: pl.Out[pl.Tensor[[1, 128], pl.INT32]],
            shifted: pl.Out[pl.Tensor[[16, 128], pl.INT32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        seq = pl.assemble(seq, pl.arange(start, [1, 128]), [0, 0])
    # Split in column halves: the second chunk's sequence starts at start - 64.
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)]):
        row = pl.tensor.arange(start, [1, 128], descending=True)
        row = pl.mul(row, pl.ci(1, [1, 128]))  # pl.ci in a pl.at block: the tensor form
        shifted = pl.assemble(shifted, pl.add(x, pl.col_expand(x, row)), [0, 0])
    return seq, shifted


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_tensor_sequence_continues_in_each_column_chunk(platform):
    x = torch.randint(-1000, 1000, (16, 128), dtype=torch.int32)
    seq, shifted = torch.empty(1, 128, dtype=torch.int32), torch.empty(16, 128, dtype=torch.int32)
    tensors(x, 11, seq, shifted, config=RunConfig(platform=platform))
    j = torch.arange(128, dtype=torch.int32)
    assert torch.equal(seq[0], 11 + j)
    assert torch.equal(shifted, x + (11 - j) * (1 + j))


@pytest.mark.parametrize(("expr", "message"), [
    ("pl.tile.ci(0, [2, 64])", r"TCI fills one row: the shape must be \[1, n\], got \[2, 64\]"),
    ("pl.tile.ci(0, [1, 64], pl.FP32)", "the sequence is INT16 or INT32"),
    ("pl.tile.ci(1.5, [1, 64])", "start must be an integer scalar"),
    ("pl.tile.ci(0, [1, 64], pl.INT32, 1)", "descending must be True or False"),
])
def test_misuse_is_a_type_error_at_the_line(expr, message):
    source = ("import pypto.language as pl\n\n\n@pl.jit.incore\n"
              f"def seq(out: pl.Out[pl.Tensor[[1, {N}], pl.INT32]]):\n"
              f"    out = pl.store(pl.cast({expr}, pl.INT32), [0, 0], out)\n"
              "    return out\n")
    error, lines = raised_by(
        source, lambda ns: ns["seq"].frontend(torch.zeros(1, N, dtype=torch.int32)),
        TypeCheckError)
    assert re.search(message, str(error))
    assert expr in lines[error.span.line - 1]
