"""The runtime's four task rings (pypto.runtime.rings): a task takes a slot and its
dependency entries, a scratch tensor its bytes, from ring min(scope depth, 3); what does
not fit waits for first-in-first-out reclamation, what can never fit stops the run naming
the ring, the resource and what to raise; RunConfig(ring_*=) and PTO2_RING_* size them;
enable_scope_stats writes scope_stats.jsonl."""

from __future__ import annotations

import json

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig
from pypto.runtime.errors import OrchestrationError, UnsupportedError
from pypto.runtime.rings import DEFAULTS

N, TR, TC = 8, 16, 128
ROWS = N * TR
TILE_BYTES = TR * TC * 4  # one [TR, TC] FP32 scratch tensor: 8192 bytes


@pl.jit.inline
def doubled_rows(a: pl.Tensor[[ROWS, TC], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]):
    for i in pl.range(N):  # N tasks, one per row block
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.mul(t, 2.0), [i * TR, 0], out)
    return out


@pl.jit.inline
def through_scratch(a: pl.Tensor[[ROWS, TC], pl.FP32],
                    out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]], i: pl.Scalar[pl.INDEX]):
    s = pl.create_tensor([TR, TC], pl.FP32)  # row block i via a fresh scratch tile
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [i * TR, 0], [TR, TC])
        pl.store(pl.mul(t, 2.0), [0, 0], s)
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(s, [0, 0], [TR, TC])
        pl.store(pl.add(t, 1.0), [i * TR, 0], out)
    return out


@pl.jit(auto_scope=False)
def one_scope(a: pl.Tensor[[ROWS, TC], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]):
    with pl.scope():  # depth 0: all N tasks in ring 0, held until the scope closes
        out = doubled_rows(a, out)
    return out


@pl.jit(auto_scope=False)
def split_scopes(a: pl.Tensor[[ROWS, TC], pl.FP32],
                 out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]):
    for i in pl.range(N):
        # One task per scope: its slot is reclaimed once it finished.
        with pl.scope(), pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.mul(t, 2.0), [i * TR, 0], out)
    return out


@pl.jit(auto_scope=False)
def fan_in(a: pl.Tensor[[ROWS, TC], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]):
    with pl.scope():
        out = doubled_rows(a, out)
        # Depth 1, ring 1: one task waiting on all N writers.
        with pl.scope(), pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(N):
                t = pl.load(out, [i * TR, 0], [TR, TC])
                pl.store(pl.add(t, 1.0), [i * TR, 0], out)
    return out


@pl.jit(auto_scope=False)
def scratch_per_row(a: pl.Tensor[[ROWS, TC], pl.FP32],
                    out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]):
    with pl.scope():
        for i in pl.range(N):
            with pl.scope():  # depth 1, ring 1: one scratch tile per scope
                out = through_scratch(a, out, i)
    return out


@pl.jit(auto_scope=False)
def scratch_in_one_scope(a: pl.Tensor[[ROWS, TC], pl.FP32],
                         out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]):
    with pl.scope():
        for i in pl.range(N):  # every scratch tile held by the one open scope
            out = through_scratch(a, out, i)
    return out


def _run(kernel, config):
    a = torch.randn(ROWS, TC)
    out = torch.zeros(ROWS, TC)
    kernel(a, out, config=config)
    return a, out


def _refused(kernel, config) -> str:
    with pytest.raises(OrchestrationError) as info:
        _run(kernel, config)
    return str(info.value)


def test_a_task_window_full_of_an_open_scope_stops_the_run_and_fits_once_sized():
    message = _refused(one_scope, RunConfig(ring_task_window=4))
    assert "ring 0 task_window overflow" in message
    assert "the ring has 4" in message and "scopes still open hold" in message
    assert "raise ring_task_window (PTO2_RING_TASK_WINDOW) or split the scope" in message
    a, out = _run(one_scope, RunConfig(ring_task_window=[8, 4, 4, 4]))
    assert torch.equal(out, a * 2.0)


def test_split_scopes_reclaim_their_slots_so_a_small_window_suffices():
    a, out = _run(split_scopes, RunConfig(ring_task_window=4, workers=1))
    assert torch.equal(out, a * 2.0)


def test_a_dependency_pool_smaller_than_one_task_s_fan_in_stops_the_run():
    message = _refused(fan_in, RunConfig(ring_dep_pool=[64, 4, 64, 64]))
    assert "ring 1 dep_pool overflow" in message and f"needs {N} dependency-edge" in message
    assert "more than the ring holds" in message
    assert "raise ring_dep_pool (PTO2_RING_DEP_POOL)" in message
    a, out = _run(fan_in, RunConfig(ring_dep_pool=[64, N, 64, 64]))
    assert torch.equal(out, a * 2.0 + 1.0)


def test_heap_bytes_of_an_open_scope_stop_the_run_and_closed_scopes_give_them_back():
    message = _refused(scratch_in_one_scope, RunConfig(ring_heap=4 * TILE_BYTES))
    assert "ring 0 heap overflow" in message and "alloc_tensor" in message
    assert "raise ring_heap (PTO2_RING_HEAP)" in message
    message = _refused(scratch_per_row, RunConfig(ring_heap=[1 << 20, 1024, 1 << 20, 1 << 20]))
    assert "ring 1 heap overflow" in message and "more than the ring holds" in message
    # Ring 1 holds two tiles: each scope's tile comes back once its scope closed and its
    # tasks finished, so the orchestration waits rather than fails.
    a, out = _run(scratch_per_row, RunConfig(ring_heap=[1024, 2 * TILE_BYTES, 1024, 1024],
                                             workers=1))
    assert torch.equal(out, a * 2.0 + 1.0)


def test_scope_stats_record_the_capacities_and_each_scope_s_peaks(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))
    _run(fan_in, RunConfig(enable_scope_stats=True, ring_task_window=[16, 8, 0, 0]))
    lines = (tmp_path / "dfx_outputs" / "scope_stats" / "scope_stats.jsonl").read_text()
    run, *scopes = [json.loads(line) for line in lines.splitlines()]
    assert run == {"kind": "run", "rings": 4,
                   "task_window_max": [16, 8] + [DEFAULTS["task_window"]] * 2,
                   "heap_max": [DEFAULTS["heap"]] * 4,
                   "dep_pool_max": [DEFAULTS["dep_pool"]] * 4}
    implicit, outer, inner = scopes
    assert (implicit["depth"], outer["depth"], inner["depth"]) == (-1, 0, 1)
    assert (outer["ring"], inner["ring"]) == (0, 1)
    assert (outer["tasks"], inner["tasks"], inner["first_task"]) == (N + 1, 1, N)
    assert outer["task_window_peak"] == N  # the writers, all held by the open scope
    assert (inner["task_window_peak"], inner["dep_pool_peak"]) == (1, N)


def test_env_variables_are_the_defaults_and_zero_entries_keep_them(monkeypatch):
    monkeypatch.setenv("PTO2_RING_TASK_WINDOW", "64")
    monkeypatch.setenv("PTO2_RING_HEAP", "4096")
    config = RunConfig(ring_task_window=[0, 8, 0, 0])
    assert config.rings["task_window"] == (64, 8, 64, 64)
    assert config.rings["heap"] == (4096,) * 4
    assert config.rings["dep_pool"] == (DEFAULTS["dep_pool"],) * 4
    monkeypatch.setenv("PTO2_RING_DEP_POOL", "2")
    with pytest.raises(ValueError, match=r"PTO2_RING_DEP_POOL.*in \[4, 2147483647\]"):
        RunConfig()


@pytest.mark.parametrize("keyword, value, message", [
    ("ring_task_window", 3, "power of two >= 4"),
    ("ring_task_window", [8, 8, 8, 12], "power of two >= 4"),
    ("ring_heap", 1000, "power of two >= 1024"),
    ("ring_heap", 512, "power of two >= 1024"),
    ("ring_dep_pool", 3, r"in \[4, 2147483647\]"),
    ("ring_dep_pool", 2**31, r"in \[4, 2147483647\]"),
    ("ring_task_window", [8, 8, 8], "list of exactly 4"),
    ("ring_heap", True, "list of exactly 4"),
    ("ring_dep_pool", "64", "list of exactly 4"),
])
def test_bad_sizes_are_refused_with_the_constraint(keyword, value, message):
    with pytest.raises(ValueError, match=message):
        RunConfig(**{keyword: value})


def test_a_run_that_needs_the_python_scheduler_refuses_ring_arguments():
    with pytest.raises(UnsupportedError, match="native scheduler.*schedule_seed"):
        _run(one_scope, RunConfig(ring_task_window=8, schedule_seed=1))


def _rings_of_tasks(kernel, tmp_path, monkeypatch) -> list[int]:
    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))
    _run(kernel, RunConfig(enable_dep_gen=True))
    graph = json.loads((tmp_path / "dfx_outputs" / "deps.json").read_text())
    return [t["ring"] for t in graph["tasks"]]


@pytest.mark.parametrize("scheduler", ["native", "python"])
def test_auto_scopes_put_loop_tasks_one_ring_deeper_unless_turned_off(scheduler, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setenv("PYPTO_SCHEDULER", scheduler)  # both record each task's ring
    @pl.jit
    def placed(a: pl.Tensor[[ROWS, TC], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]):
        out = doubled_rows(a, out)  # the loop body is a scope of depth 1
        with pl.at(level=pl.Level.CORE_GROUP):  # the function body's scope: depth 0
            t = pl.load(out, [0, 0], [TR, TC])
            pl.store(pl.add(t, 1.0), [0, 0], out)
        return out

    @pl.jit(auto_scope=False)
    def unplaced(a: pl.Tensor[[ROWS, TC], pl.FP32],
                 out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]):
        out = doubled_rows(a, out)
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(out, [0, 0], [TR, TC])
            pl.store(pl.add(t, 1.0), [0, 0], out)
        return out

    assert _rings_of_tasks(placed, tmp_path / "a", monkeypatch) == [1] * N + [0]
    assert _rings_of_tasks(unplaced, tmp_path / "b", monkeypatch) == [0] * (N + 1)
    args = (torch.zeros(ROWS, TC), torch.zeros(ROWS, TC))
    text = unplaced.frontend(*args).as_python()
    assert "pl.func_attr({'auto_scope': False})" in text
    assert pl.parse(text).as_python() == text
    assert "auto_scope" not in placed.frontend(*args).as_python()
