"""pl.paged_gather's Vec form in device code, proven on pto-isa's CPU models against the
simulators: the indices loaded, TSHRS / TANDS into block and slot, MGATHER<Coalesce::Elem>
of the physical blocks from the block table, TSHLS + TADD into physical rows and
MGATHER<Coalesce::Row> of the pool's rows, a later operator reading the result."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator

import pypto.language as pl

pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")]

POOL_ROWS, D, BLOCK, N = 64, 32, 8, 16
TABLE = torch.tensor([[7, 2, 5, 0, 3]], dtype=torch.int32)
INDICES = torch.tensor([[0, 7, 8, 15, 16, 23, 24, 31, 32, 39, 9, 9, 1, 30, 17, 38]],
                       dtype=torch.int32)


@pl.jit
def gather_then_add(src: pl.Tensor, indices: pl.Tensor, table: pl.Tensor,
                    out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        kv = pl.paged_gather(src, indices, table, BLOCK, D, N, space=pl.Mem.Vec)
        out[:] = pl.add(kv, 1.0)
    return out


def _arguments():
    g = torch.Generator().manual_seed(9)
    return [torch.randn(POOL_ROWS, D, generator=g), INDICES, TABLE, torch.zeros(N, D)]


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_paged_gather_agrees_with_the_simulator(platform):
    src = _arguments()[0]
    rows = [int(TABLE[0, i // BLOCK]) * BLOCK + i % BLOCK for i in INDICES[0].tolist()]
    got = outputs_agreeing_with_the_simulator(gather_then_add, _arguments, 3, platform)[0]
    assert torch.equal(got, src[rows] + 1.0)
