"""pl.scatter_update in device code, proven on pto-isa's CPU models against the simulators: a
pl.at block's row scatter lowers to TCI, MGATHER<Coalesce::Elem> (the chunk's indices) and
MSCATTER<Coalesce::Row> on a GlobalTensor of the whole cache, with a repeated index (the later
row stays) and, in a second block, a reader ordered after the write; and pl.tile.mscatter's
row form on a partial tile (rows past its valid region not written)."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator
from scatter_programs import scatter_update_rows

import pypto.language as pl

pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")]

ROWS, D = 64, 32
INDEX = torch.tensor([[3, 0, 7, 63], [12, 7, 40, 1]], dtype=torch.int32)


@pl.jit
def update_then_read(cache: pl.InOut[pl.Tensor], index: pl.Tensor, src: pl.Tensor,
                     out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        cache = pl.scatter_update(cache, -2, index, src)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(cache, 1.0)
    return cache, out


def _arguments():
    g = torch.Generator().manual_seed(5)
    return [torch.randn(ROWS, D, generator=g), INDEX, torch.randn(8, D, generator=g),
            torch.zeros(ROWS, D)]


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_a_tensor_level_scatter_update_agrees_with_the_simulator(platform):
    cache, index, src, _ = _arguments()
    want = cache.clone()
    for k, i in enumerate(index.reshape(-1).tolist()):
        want[i] = src[k]
    got, out = outputs_agreeing_with_the_simulator(update_then_read, _arguments, 0, platform)[::3]
    assert torch.equal(got, want) and torch.equal(out, want + 1.0)


@pl.jit.incore
def row_scatter(src: pl.Tensor[[8, D], pl.FP16], ids: pl.Tensor[[1, 8], pl.INT32],
                table: pl.InOut[pl.Tensor[[ROWS, D], pl.FP16]]):
    values = pl.load(src, [0, 0], [8, D], valid_shape=[6, D])
    table = pl.tile.mscatter(values, pl.load(ids, [0, 0], [1, 8]), table, coalesce="row")
    return table


def _row_arguments():
    g = torch.Generator().manual_seed(6)
    ids = torch.tensor([[5, 9, 5, 63, 0, 1, 2, 3]], dtype=torch.int32)
    return [torch.randn(8, D, generator=g).half(), ids, torch.randn(ROWS, D, generator=g).half()]


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_a_row_mscatter_agrees_with_the_simulator(platform):
    src, ids, table = _row_arguments()
    want = table.clone()
    for k, i in enumerate(ids[0, :6].tolist()):
        want[i] = src[k]
    (got,) = outputs_agreeing_with_the_simulator(row_scatter, _row_arguments, 2, platform)
    assert torch.equal(got, want)


# Upstream's rank-4 form: the KV cache [blockNum, blockSize, 1, d] and src [b, s, 1, d] are
# read as their rows (MGATHER<Coalesce::Row> of src, MSCATTER<Coalesce::Row> into the cache,
# GlobalTensors of blockNum * blockSize and b * s rows).
def _block_arguments():
    g = torch.Generator().manual_seed(7)
    return [torch.randn(8, 8, 1, D, generator=g).bfloat16(), INDEX,
            torch.randn(2, 4, 1, D, generator=g).bfloat16()]


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_the_rank4_scatter_update_agrees_with_the_simulator(platform):
    cache, index, src = _block_arguments()
    want = cache.clone().reshape(ROWS, D)
    for k, i in enumerate(index.reshape(-1).tolist()):
        want[i] = src.reshape(8, D)[k]
    got = outputs_agreeing_with_the_simulator(scatter_update_rows, _block_arguments, 0,
                                              platform)[0]
    assert got.shape == cache.shape and torch.equal(got, want.reshape(cache.shape))
