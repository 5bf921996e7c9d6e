"""The runtime under load: many concurrent calls from Python threads give correct results,
and a single simulated core (workers=1) never deadlocks.

Calls run on daemon threads joined with a timeout, so a deadlock fails the test instead
of hanging the suite.
"""

from __future__ import annotations

import queue
import threading

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

R, C = 32, 128
CALLS, THREADS = 100, 8
TIMEOUT_S = 240


@pl.jit
def chained(x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="sum"):
        s = pl.add(x, y)
    for b in pl.spmd(4, name_hint="rows"):
        t = pl.load(s, [b * 8, 0], [8, C])
        out = pl.store(pl.mul(t, 2.0), [b * 8, 0], out)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="shift"):
        out[:] = pl.sub(out, x)
    return out


def _call(index: int, config: RunConfig) -> bool:
    g = torch.Generator().manual_seed(index)
    x, y = torch.randn(R, C, generator=g), torch.randn(R, C, generator=g)
    out = torch.full((R, C), float("nan"))
    result = chained(x, y, out, config=config)
    return result is out and torch.equal(out, (x + y) * 2.0 - x)


def _hammer(config: RunConfig) -> dict[int, object]:
    """CALLS calls spread over THREADS threads; index -> True, False or the exception."""
    chained(*(torch.zeros(R, C) for _ in range(3)), config=config)  # build and load once
    work: queue.Queue[int] = queue.Queue()
    for i in range(CALLS):
        work.put(i)
    results: dict[int, object] = {}

    def worker() -> None:
        while True:
            try:
                i = work.get_nowait()
            except queue.Empty:
                return
            try:
                results[i] = _call(i, config)
            except Exception as exc:  # noqa: BLE001 - reported by the test
                results[i] = exc

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT_S)
    hung = sum(t.is_alive() for t in threads)
    assert not hung, f"{hung} threads still running after {TIMEOUT_S} s: a deadlock"
    return results


@pytest.mark.parametrize("config", [RunConfig(), RunConfig(workers=1),
                                    RunConfig(workers=4, schedule_seed=3)],
                         ids=["default", "one-worker", "seeded"])
def test_a_hundred_concurrent_calls_from_eight_threads_are_all_correct(config):
    results = _hammer(config)
    assert sorted(results) == list(range(CALLS))
    wrong = {i: r for i, r in results.items() if r is not True}
    assert not wrong, wrong
