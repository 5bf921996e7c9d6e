"""A 10,000-task graph completes with correct results (the overhead number is printed, not
asserted)."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

pytestmark = pytest.mark.usefixtures("engine")  # both schedulers (conftest.py)

TASKS, C = 10_000, 128


@pl.jit
def one_task_per_row(x: pl.Tensor[[TASKS, C], pl.FP32], out: pl.Out[pl.Tensor[[TASKS, C],
                                                                              pl.FP32]]):
    for i in pl.parallel(TASKS):
        # Every task gets all of `out`; its rows are disjoint from the others', which the
        # runtime cannot prove, so the task opts `out` out of inference.
        with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[out]):
            row = pl.load(x, [i, 0], [1, C])
            out = pl.store(pl.add(row, i), [i, 0], out)
    return out


def test_ten_thousand_tasks_complete_with_correct_results(engine):
    x = torch.randn(TASKS, C)
    out = torch.zeros(TASKS, C)
    compiled = one_task_per_row.compile(x, out)
    compiled(x, out, config=RunConfig(workers=2))
    expected = x + torch.arange(TASKS, dtype=torch.float32)[:, None]
    assert torch.equal(out, expected)
