"""Each task gets the window of each tensor it touches, so the runtime's byte ranges see what
the task really accesses: disjoint windows give no edge, overlapping windows keep theirs."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

N, R, C = 8, 16, 128
HALF = R // 2


@pl.jit
def disjoint_rows(x: pl.Tensor[[N * R, C], pl.FP32], out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]],
                  total: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]):
    for i in pl.parallel(N):  # one task per iteration, each writing its own rows
        with pl.at(level=pl.Level.CORE_GROUP):
            out[i * R:i * R + R, :] = pl.add(x[i * R:i * R + R, :], 1.0)
    with pl.at(level=pl.Level.CORE_GROUP):
        total[:] = pl.mul(out, 2.0)  # reads all of out: waits for every writer
    return out, total


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_parallel_tasks_writing_disjoint_rows_have_no_edges_between_them(platform, read_dfx):
    x = torch.randn(N * R, C)
    out, total = torch.zeros(N * R, C), torch.zeros(N * R, C)
    disjoint_rows(x, out, total, config=RunConfig(platform=platform, enable_dep_gen=True))
    assert torch.equal(out, x + 1.0) and torch.equal(total, (x + 1.0) * 2.0)
    deps = read_dfx("deps.json")
    assert [(e["src"], e["dst"], e["kind"]) for e in deps["edges"]] == [
        (i, N, "RAW") for i in range(N)]
    for i, task in enumerate(deps["tasks"][:N]):
        windows = [(a["name"], a["offset"], a["shape"]) for a in task["args"] if "shape" in a]
        assert windows == [("x", i * R * C, [R, C]), ("out", i * R * C, [R, C])]
    assert [a.get("shape") for a in deps["tasks"][N]["args"]] == [[N * R, C], [N * R, C]]


def test_disjoint_windows_are_not_a_race(read_dfx):
    x = torch.randn(N * R, C)
    for seed in (None, 0, 1):
        out, total = torch.zeros(N * R, C), torch.zeros(N * R, C)
        disjoint_rows(x, out, total, config=RunConfig(schedule_seed=seed, detect_races=True,
                                                      workers=4))
        assert torch.equal(total, (x + 1.0) * 2.0)


@pl.jit
def overlapping_rows(x: pl.Tensor[[(N + 1) * R, C], pl.FP32],
                     out: pl.Out[pl.Tensor[[(N + 1) * R, C], pl.FP32]]):
    for i in pl.parallel(N):  # task i writes blocks i and i + 1: neighbours overlap
        with pl.at(level=pl.Level.CORE_GROUP):
            out[i * R:i * R + 2 * R, :] = pl.add(x[i * R:i * R + 2 * R, :], i)
    return out


def expected_overlapping(x):
    block = torch.arange((N + 1) * R)[:, None] // R  # task b (after task b - 1) wins block b
    return x + torch.clamp(block, max=N - 1).float()


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_overlapping_windows_keep_their_write_after_write_edges(platform, read_dfx):
    x = torch.randn((N + 1) * R, C)
    out = torch.zeros((N + 1) * R, C)
    overlapping_rows(x, out, config=RunConfig(platform=platform, enable_dep_gen=True))
    assert torch.equal(out, expected_overlapping(x))
    edges = read_dfx("deps.json")["edges"]
    assert [(e["src"], e["dst"], e["kind"]) for e in edges] == [
        (i, i + 1, "WAW") for i in range(N - 1)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_overlapping_windows_give_one_result_in_every_order(seed):
    x = torch.randn((N + 1) * R, C)
    out = torch.zeros((N + 1) * R, C)
    overlapping_rows(x, out, config=RunConfig(schedule_seed=seed, detect_races=True))
    assert torch.equal(out, expected_overlapping(x))


@pl.jit
def straddling_reads(x: pl.Tensor[[N * R, C], pl.FP32], out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]],
                     y: pl.Out[pl.Tensor[[(N - 1) * R, C], pl.FP32]]):
    for i in pl.parallel(N):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="write"):
            out[i * R:i * R + R, :] = pl.add(x[i * R:i * R + R, :], 1.0)
    for j in pl.parallel(N - 1):  # reads the lower half of block j and the upper of j + 1
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="read"):
            y[j * R:j * R + R, :] = pl.mul(out[j * R + HALF:j * R + HALF + R, :], 2.0)
    return out, y


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_reader_waits_only_for_the_writers_its_window_overlaps(platform, read_dfx):
    x = torch.randn(N * R, C)
    out, y = torch.zeros(N * R, C), torch.zeros((N - 1) * R, C)
    straddling_reads(x, out, y, config=RunConfig(platform=platform, enable_dep_gen=True))
    assert torch.equal(y, (x[HALF:HALF + (N - 1) * R] + 1.0) * 2.0)
    edges = read_dfx("deps.json")["edges"]
    assert sorted((e["src"], e["dst"], e["kind"]) for e in edges) == sorted(
        [(j, N + j, "RAW") for j in range(N - 1)] + [(j + 1, N + j, "RAW") for j in range(N - 1)])


@pl.jit
def unanalysable(x: pl.Tensor[[N * R, C], pl.FP32], out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]):
    for i in pl.parallel(N):
        with pl.at(level=pl.Level.CORE_GROUP):
            for h in pl.range(2):  # offsets move with the kernel's own loop
                t = pl.load(x, [i * R + h * HALF, 0], [HALF, C])
                out = pl.store(pl.add(t, 1.0), [i * R + h * HALF, 0], out)
    return out


def test_tasks_whose_window_is_not_analysable_get_the_whole_tensor_and_its_edges(read_dfx):
    x = torch.randn(N * R, C)
    out = torch.zeros(N * R, C)
    unanalysable(x, out, config=RunConfig(enable_dep_gen=True))
    assert torch.equal(out, x + 1.0)
    deps = read_dfx("deps.json")
    assert all(a.get("shape") in (None, [N * R, C]) for t in deps["tasks"] for a in t["args"])
    assert [(e["src"], e["dst"], e["kind"]) for e in deps["edges"]] == [
        (i, i + 1, "WAW") for i in range(N - 1)]
