"""Gathers and scatters in device code, proven on pto-isa's CPU model against the simulators:
pl.tile.mgather / pl.tile.mscatter (MGATHER<Coalesce, GatherOOB> and MSCATTER on a
GlobalTensor of the whole tensor): row and element gathers under each out-of-range policy with
indices past either end (INT32 extremes, UINT32), a partial index tile (its padding zeroed by
a TEXPANDS), valid_shape=, FP16 and INT16 tables, and a scatter with repeated indices;
pl.tile.gather / gatherb (TGATHER, TGATHERB) within a tile, indices outside it, a
half-element byte offset; pl.tensor.gather in a pl.at block (lowered to MGATHER)."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator

import pypto.language as pl

pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")]

ROWS, R, C = 16, 8, 32


@pl.jit.incore
def gathers(table: pl.Tensor[[ROWS, C], pl.FP32], h16: pl.Tensor[[ROWS, C], pl.FP16],
            i16: pl.Tensor[[ROWS, C], pl.INT16], rows: pl.Tensor[[1, R], pl.INT32],
            elems: pl.Tensor[[R, C], pl.INT32], wide: pl.Tensor[[R, C], pl.UINT32],
            src: pl.Tensor[[R, C], pl.FP32],
            row_clamp: pl.Out[pl.Tensor[[R, C], pl.FP32]],
            row_zero: pl.Out[pl.Tensor[[R, C], pl.FP32]],
            elem_wrap: pl.Out[pl.Tensor[[R, C], pl.FP16]],
            elem_clamp: pl.Out[pl.Tensor[[R, C], pl.INT16]],
            elem_zero: pl.Out[pl.Tensor[[R, C], pl.FP32]],
            partial: pl.Out[pl.Tensor[[R, C], pl.FP32]],
            scattered: pl.InOut[pl.Tensor[[ROWS, C], pl.FP32]],
            part: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    r = pl.load(rows, [0, 0], [1, R])
    e = pl.load(elems, [0, 0], [R, C])
    row_clamp = pl.store(pl.tile.mgather(table, r, gather_oob="clamp"), [0, 0], row_clamp)
    row_zero = pl.store(pl.tile.mgather(table, r, gather_oob="zero"), [0, 0], row_zero)
    elem_wrap = pl.store(pl.tile.mgather(h16, e, coalesce="elem", gather_oob="wrap"), [0, 0],
                         elem_wrap)
    elem_clamp = pl.store(pl.tile.mgather(i16, e, coalesce="elem", gather_oob="clamp"),
                          [0, 0], elem_clamp)
    w = pl.load(wide, [0, 0], [R, C])
    elem_zero = pl.store(pl.tile.mgather(table, w, coalesce="elem", gather_oob="zero"), [0, 0],
                         elem_zero)
    p = pl.load(elems, [0, 0], [R, C], valid_shape=[R, 5])
    g = pl.tile.mgather(table, p, coalesce="elem", gather_oob="wrap")
    partial = pl.store(pl.set_validshape(g, R, C), [0, 0], partial)
    pl.tile.mscatter(pl.load(src, [0, 0], [R, C]), pl.ands(e, ROWS * C - 1), scattered)
    k = pl.tile.mgather(table, r, valid_shape=[5, 24], gather_oob="wrap")
    part = pl.store(pl.set_validshape(k, R, C), [0, 0], part)
    return row_clamp, row_zero, elem_wrap, elem_clamp, elem_zero, partial, scattered, part


def _arguments():
    g = torch.Generator().manual_seed(1)
    table = torch.randn(ROWS, C, generator=g)
    half = (torch.randn(ROWS, C, generator=g) * 100).half()
    short = torch.randint(-2**15, 2**15, (ROWS, C), generator=g, dtype=torch.int16)
    rows = torch.tensor([[3, 0, 15, 16, -1, 2**31 - 1, -2**31, 7]], dtype=torch.int32)
    elems = torch.randint(-1000, 1000, (R, C), generator=g, dtype=torch.int32)
    elems.view(-1)[:8] = torch.tensor([7, 7, 0, 7, ROWS * C, -1, 2**31 - 1, -2**31])
    wide = torch.randint(0, 2 * ROWS * C, (R, C), generator=g, dtype=torch.int64)
    wide.view(-1)[:2] = torch.tensor([2**32 - 1, ROWS * C])
    src = torch.randn(R, C, generator=g)
    outs = [torch.zeros(R, C), torch.zeros(R, C), torch.zeros(R, C, dtype=torch.float16),
            torch.zeros(R, C, dtype=torch.int16), torch.zeros(R, C), torch.ones(R, C),
            torch.zeros(ROWS, C), torch.ones(R, C)]
    return [table, half, short, rows, elems, wide.to(torch.uint32), src, *outs]


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_gathers_and_a_scatter_agree_with_the_simulator(platform):
    args = _arguments()
    out = outputs_agreeing_with_the_simulator(gathers, _arguments, 7, platform)
    table, rows = args[0], args[3]
    assert torch.equal(out[0][:3], table[rows[0, :3].long()])
    assert torch.equal(out[0][3:5], table[[15, 15]]) and not out[1][3:7].any()
    assert not out[5][:, 5:].any() and not out[7][5:].any() and not out[7][:, 24:].any()
    last = int(((args[4] & (ROWS * C - 1)).view(-1) == 7).nonzero().max())
    assert torch.equal(out[6].view(-1)[7:8], args[6].view(-1)[last:last + 1])  # 7's last writer


@pl.jit.incore
def within_tiles(src: pl.Tensor[[R, C], pl.FP16], words: pl.Tensor[[R, C], pl.INT32],
                 ids: pl.Tensor[[R, 16], pl.INT32], offsets: pl.Tensor[[4, 8], pl.UINT32],
                 halves: pl.Out[pl.Tensor[[R, 16], pl.FP16]],
                 ints: pl.Out[pl.Tensor[[R, 16], pl.INT32]],
                 partial: pl.Out[pl.Tensor[[R, 16], pl.INT32]],
                 blocks: pl.Out[pl.Tensor[[4, 128], pl.FP16]]):
    s = pl.load(src, [0, 0], [R, C])
    w = pl.load(words, [0, 0], [R, C])
    i = pl.load(ids, [0, 0], [R, 16])
    halves = pl.store(pl.tile.gather(s, i, pl.create_tile([R, 16], pl.INT32)), [0, 0], halves)
    ints = pl.store(pl.tile.gather(w, i, pl.create_tile([R, 16], pl.INT32)), [0, 0], ints)
    p = pl.load(ids, [0, 0], [R, 16], valid_shape=[R, 5])
    g = pl.tile.gather(w, p, pl.create_tile([R, 5], pl.INT32))
    partial = pl.store(pl.set_validshape(g, R, 16), [0, 0], partial)
    blocks = pl.store(pl.tile.gatherb(s, pl.load(offsets, [0, 0], [4, 8])), [0, 0], blocks)
    return halves, ints, partial, blocks


def _within_arguments():
    g = torch.Generator().manual_seed(2)
    src = (torch.randn(R, C, generator=g) * 100).half()
    words = torch.randint(-2**31, 2**31 - 1, (R, C), generator=g, dtype=torch.int32)
    ids = torch.randint(-20, R * C + 20, (R, 16), generator=g, dtype=torch.int32)
    ids.view(-1)[:4] = torch.tensor([-1, 0, R * C - 1, R * C])
    offsets = torch.randint(0, R * C * 2 - 32, (4, 8), generator=g, dtype=torch.int64)
    offsets.view(-1)[:3] = torch.tensor([0, 2, R * C * 2 - 32])  # a half-element offset too
    return [src, words, ids, offsets.to(torch.uint32), torch.zeros(R, 16, dtype=torch.float16),
            torch.zeros(R, 16, dtype=torch.int32), torch.ones(R, 16, dtype=torch.int32),
            torch.zeros(4, 128, dtype=torch.float16)]


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_gathers_within_a_tile_agree_with_the_simulator(platform):
    args = _within_arguments()
    out = outputs_agreeing_with_the_simulator(within_tiles, _within_arguments, 4, platform)
    words, ids = args[1].reshape(-1), args[2]
    inside = (ids >= 0) & (ids < R * C)
    want = torch.where(inside, words[ids.long().clamp(0, R * C - 1)], 0).to(torch.int32)
    assert torch.equal(out[1], want) and torch.equal(out[2][:, :5], want[:, :5])
    assert not out[2][:, 5:].any()


@pl.jit
def tensor_gather(table: pl.Tensor, ids: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(pl.tensor.gather(table, ids), table[0:R, :])
    return out


def _tensor_gather_arguments():
    g = torch.Generator().manual_seed(3)
    table = torch.randn(ROWS, C, generator=g)
    ids = torch.randint(0, ROWS * C, (R, C), generator=g, dtype=torch.int32)
    return [table, ids, torch.zeros(R, C)]


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_a_tensor_level_gather_agrees_with_the_simulator(platform):
    table, ids, _ = _tensor_gather_arguments()
    (out,) = outputs_agreeing_with_the_simulator(tensor_gather, _tensor_gather_arguments, 2,
                                                 platform)
    assert torch.equal(out, table.reshape(-1)[ids.long()] + table[:R])
