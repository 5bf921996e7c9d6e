"""pl.scatter in a pl.at block is a write of its input that reads it too: dependency
inference gives a later reader of the input a read-after-write edge from the scatter's
task, the scatter's task an edge from an earlier writer, and race detection sees a scatter
left unordered after a reader."""

from __future__ import annotations

import pytest
import torch
from scatter_programs import row_scattered

import pypto.language as pl
from pypto.runtime import RaceError, RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

ROWS, S, K = 8, 32, 4


def indices() -> torch.Tensor:
    return torch.randint(0, S, (ROWS, K), generator=torch.Generator().manual_seed(2),
                         dtype=torch.int32)


@pl.jit
def fill_scatter_read(t: pl.InOut[pl.Tensor], index: pl.Tensor, src: pl.Tensor,
                      out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t[:] = pl.mul(t, 2.0)  # a writer the scatter must follow (it keeps t's other elements)
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.scatter(t, -1, index, src)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(t, 1.0)
    return t, out


def test_the_scatter_task_is_ordered_between_the_writer_and_the_reader(read_dfx):
    t, src = torch.randn(ROWS, S), torch.randn(ROWS, K)
    args = [t.clone(), indices(), src, torch.zeros(ROWS, S)]
    fill_scatter_read(*args, config=RunConfig(enable_dep_gen=True))
    want = row_scattered(t * 2.0, indices(), src)
    assert torch.equal(args[0], want) and torch.equal(args[3], want + 1.0)
    edges = {(e["src"], e["dst"], e["kind"]) for e in read_dfx("deps.json")["edges"]}
    assert {(0, 1, "RAW"), (1, 2, "RAW")} <= edges


@pl.jit
def read_then_scatter(t: pl.InOut[pl.Tensor], index: pl.Tensor, src: pl.Tensor,
                      out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[t]):
        out[:] = pl.add(t, 1.0)
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.scatter(t, -1, index, src)  # nothing orders it after the read
    return t, out


def test_a_scatter_after_an_unordered_reader_is_a_write_after_read_race():
    with pytest.raises(RaceError, match="write-after-read"):
        read_then_scatter(torch.randn(ROWS, S), indices(), torch.randn(ROWS, K),
                          torch.zeros(ROWS, S), config=RunConfig(detect_races=True))
