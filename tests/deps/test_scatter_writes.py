"""A pl.tile.mscatter is a write of its tensor: dependency inference orders a later reader
after it (a read-after-write edge), widens the kernel parameter it scatters into to a
written one, and race detection sees an unordered scatter after a read."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RaceError, RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

ROWS, R, C = 16, 8, 32


def scatter_indices() -> torch.Tensor:
    """Indices into a [ROWS, C] table, some repeated."""
    ids = torch.randint(0, ROWS * C, (R, C), generator=torch.Generator().manual_seed(9),
                        dtype=torch.int32)
    ids.view(-1)[:4] = torch.tensor([7, 7, 0, 7])
    return ids


def expected_scatter(src: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    want = torch.zeros(ROWS * C)
    for k, v in zip(ids.reshape(-1).tolist(), src.reshape(-1), strict=True):
        want[k] = v
    return want.reshape(ROWS, C)


@pl.jit.incore
def scatter_task(src: pl.Tensor[[R, C], pl.FP32], ids: pl.Tensor[[R, C], pl.INT32],
                 table: pl.Tensor[[ROWS, C], pl.FP32]):  # declared In: the write is inferred
    pl.tile.mscatter(pl.load(src, [0, 0], [R, C]), pl.load(ids, [0, 0], [R, C]), table)
    return table


@pl.jit.incore
def gather_task(table: pl.Tensor[[ROWS, C], pl.FP32], ids: pl.Tensor[[R, C], pl.INT32],
                out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    g = pl.tile.mgather(table, pl.load(ids, [0, 0], [R, C]), coalesce="elem")
    out = pl.store(g, [0, 0], out)
    return out


@pl.jit
def scatter_then_gather(src: pl.Tensor, ids: pl.Tensor, table: pl.InOut[pl.Tensor],
                        out: pl.Out[pl.Tensor]):
    table = scatter_task(src, ids, table)
    out = gather_task(table, ids, out)
    return table, out


@pl.jit
def gather_then_scatter(src: pl.Tensor, ids: pl.Tensor, table: pl.InOut[pl.Tensor],
                        out: pl.Out[pl.Tensor]):
    out = gather_task(table, ids, out)
    table = scatter_task(src, ids, table)  # nothing orders it after the read
    return table, out


def test_a_gather_after_a_scatter_waits_for_it_in_every_order():
    src, ids = torch.randn(R, C), scatter_indices()
    want = expected_scatter(src, ids)
    for seed in (0, 1, 2):
        table, out = torch.zeros(ROWS, C), torch.zeros(R, C)
        scatter_then_gather(src, ids, table, out,
                            config=RunConfig(schedule_seed=seed, detect_races=True))
        assert torch.equal(table, want) and torch.equal(out, want.view(-1)[ids.long()])


def test_the_scatter_task_has_a_read_after_write_edge_to_the_gather(read_dfx):
    src, ids = torch.randn(R, C), scatter_indices()
    scatter_then_gather(src, ids, torch.zeros(ROWS, C), torch.zeros(R, C),
                        config=RunConfig(enable_dep_gen=True))
    edges = read_dfx("deps.json")["edges"]
    assert [(e["src"], e["dst"], e["kind"]) for e in edges] == [(0, 1, "RAW")]


def test_a_scatter_after_an_unordered_gather_is_a_write_after_read_race():
    with pytest.raises(RaceError, match="write-after-read"):
        gather_then_scatter(torch.randn(R, C), scatter_indices(), torch.zeros(ROWS, C),
                            torch.zeros(R, C), config=RunConfig(detect_races=True))
