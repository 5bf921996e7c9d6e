"""pl.manual_scope and no_dep_args: no inference, so only deps= orders the tasks."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RaceError, RunConfig

pytestmark = pytest.mark.usefixtures("engine")  # both schedulers (conftest.py)

R, C = 32, 128
SEEDS = range(8)


@pl.jit
def unordered(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.manual_scope():
        with pl.at(level=pl.Level.CORE_GROUP):
            scratch = pl.add(x, 1.0)
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(scratch, 2.0)
    return out


@pl.jit
def ordered(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.manual_scope():
        with pl.at(level=pl.Level.CORE_GROUP) as produce:
            scratch = pl.add(x, 1.0)
        with pl.at(level=pl.Level.CORE_GROUP, deps=[produce]):
            out[:] = pl.mul(scratch, 2.0)
    return out


def run(kernel, seed, **config):
    x = torch.randn(R, C, generator=torch.Generator().manual_seed(1))
    out = torch.zeros(R, C)
    kernel(x, out, config=RunConfig(schedule_seed=seed, **config))
    return x, out


def test_without_deps_the_detector_fires_on_the_unordered_read():
    with pytest.raises(RaceError, match="read-after-write race on `scratch`") as info:
        run(unordered, None, detect_races=True)
    assert (info.value.writer, info.value.reader) == (0, 1)


def test_without_deps_some_seed_reads_the_scratch_before_it_is_written():
    outcomes = [run(unordered, seed) for seed in SEEDS]
    assert any(out.isnan().all() for _, out in outcomes), "no seed ran the consumer first"
    assert any(torch.equal(out, (x + 1.0) * 2.0) for x, out in outcomes)


def test_without_deps_the_graph_has_no_edge_and_the_arguments_are_untracked(read_dfx):
    run(unordered, 0, enable_dep_gen=True)
    deps = read_dfx("deps.json")
    assert deps["edges"] == []
    assert all(not a["tracked"] for t in deps["tasks"] for a in t["args"])


@pytest.mark.parametrize("seed", [None, *SEEDS])
def test_with_deps_every_seed_is_correct_and_race_free(seed):
    x, out = run(ordered, seed, detect_races=True)
    assert torch.equal(out, (x + 1.0) * 2.0)


def test_with_deps_the_only_edge_is_the_explicit_one(read_dfx):
    run(ordered, 2, enable_dep_gen=True)
    assert [(e["src"], e["dst"], e["source"]) for e in read_dfx("deps.json")["edges"]] == [
        (0, 1, "explicit")]


def test_a_task_after_the_manual_scope_still_waits_for_what_was_written_inside(read_dfx):
    @pl.jit
    def then_auto(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        with pl.manual_scope(), pl.at(level=pl.Level.CORE_GROUP):
            scratch = pl.add(x, 1.0)
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(scratch, 2.0)
        return out

    for seed in SEEDS:
        x, out = run(then_auto, seed)
        assert torch.equal(out, (x + 1.0) * 2.0)
    run(then_auto, 0, enable_dep_gen=True)
    assert [(e["src"], e["dst"], e["kind"]) for e in read_dfx("deps.json")["edges"]] == [
        (0, 1, "RAW")]


HALF = R // 2


@pl.jit
def halves(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
           total: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    # Each task writes its own half of `out`, but gets all of it: without no_dep_args
    # the runtime would order them (it cannot prove the halves disjoint).
    with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[out]):
        t = pl.load(x, [0, 0], [HALF, C])
        out = pl.store(pl.add(t, 1.0), [0, 0], out)
    with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[out]):
        t = pl.load(x, [HALF, 0], [HALF, C])
        out = pl.store(pl.add(t, 2.0), [HALF, 0], out)
    with pl.at(level=pl.Level.CORE_GROUP):
        total[:] = pl.mul(out, 1.0)
    return out, total


def test_no_dep_args_drops_the_conservative_edge_but_later_readers_wait_for_both(read_dfx):
    x = torch.randn(R, C)
    out, total = torch.zeros(R, C), torch.zeros(R, C)
    halves(x, out, total, config=RunConfig(schedule_seed=3, enable_dep_gen=True))
    expected = torch.cat([x[:HALF] + 1.0, x[HALF:] + 2.0])
    assert torch.equal(out, expected) and torch.equal(total, expected)
    deps = read_dfx("deps.json")
    assert [(e["src"], e["dst"], e["kind"]) for e in deps["edges"]] == [(0, 2, "RAW"),
                                                                       (1, 2, "RAW")]
    assert [(a["name"], a["tracked"]) for a in deps["tasks"][0]["args"]] == [
        ("x", True), ("out", False)]
