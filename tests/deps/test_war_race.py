"""Write-after-read is not inferred: the race is real, reproducible, detected and fixable."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RaceError, RunConfig

R, C = 32, 128
SEEDS = range(8)


@pl.jit.incore
def read_x(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    y = pl.store(pl.mul(pl.load(x, [0, 0], [R, C]), 2.0), [0, 0], y)
    return y


@pl.jit.incore
def read_x_inout(x: pl.InOut[pl.Tensor[[R, C], pl.FP32]],
                 y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    y = pl.store(pl.mul(pl.load(x, [0, 0], [R, C]), 2.0), [0, 0], y)
    return y


@pl.jit.incore
def overwrite_x(x: pl.Out[pl.Tensor[[R, C], pl.FP32]], z: pl.Tensor[[R, C], pl.FP32]):
    x = pl.store(pl.load(z, [0, 0], [R, C]), [0, 0], x)
    return x


@pl.jit
def racy(x: pl.InOut[pl.Tensor], z: pl.Tensor, y: pl.Out[pl.Tensor]):
    y = read_x(x, y)
    x = overwrite_x(x, z)  # no edge orders it after the read
    return x, y


@pl.jit
def fixed(x: pl.InOut[pl.Tensor], z: pl.Tensor, y: pl.Out[pl.Tensor]):
    y, reader = pl.submit(read_x, x, y)
    x, _ = pl.submit(overwrite_x, x, z, deps=[reader])
    return x, y


@pl.jit
def two_readers(x: pl.InOut[pl.Tensor], z: pl.Tensor, y1: pl.Out[pl.Tensor],
                y2: pl.Out[pl.Tensor]):
    y1, r1 = pl.submit(read_x, x, y1)
    y2, r2 = pl.submit(read_x, x, y2)
    x, _ = pl.submit(overwrite_x, x, z, deps=[r1, r2])
    return x, y1, y2


@pl.jit
def two_inout_readers(x: pl.InOut[pl.Tensor], z: pl.Tensor, y1: pl.Out[pl.Tensor],
                      y2: pl.Out[pl.Tensor]):
    y1 = read_x_inout(x, y1)
    y2 = read_x_inout(x, y2)
    x = overwrite_x(x, z)
    return x, y1, y2


def data():
    g = torch.Generator().manual_seed(7)
    return torch.randn(R, C, generator=g), torch.randn(R, C, generator=g)


def run(kernel, seed, *outputs, **config):
    x, z = data()
    outs = [torch.zeros(R, C) for _ in range(outputs[0] if outputs else 1)]
    kernel(x, z, *outs, config=RunConfig(schedule_seed=seed, **config))
    return x, z, outs


def test_the_detector_names_the_writer_the_reader_and_the_buffer():
    with pytest.raises(RaceError) as info:
        run(racy, None, detect_races=True)
    error = info.value
    assert (error.kind, error.reader, error.writer) == ("write-after-read", 0, 1)
    message = str(error)
    assert "read_x" in message and "overwrite_x" in message
    assert "`x` (entry parameter, FP32 [32, 128])" in message
    assert "deps=[" in message


def test_some_seed_reads_the_overwritten_buffer_and_the_same_seed_repeats_it_bit_for_bit():
    x0, z = data()
    wrong = []
    for seed in SEEDS:
        _, _, (y,) = run(racy, seed)
        if not torch.equal(y, x0 * 2.0):
            wrong.append((seed, y))
    assert wrong, "no seed ran the writer before the reader"
    seed, y = wrong[0]
    assert torch.equal(y, z * 2.0), "the reader saw the writer's data"
    _, _, (again,) = run(racy, seed)
    assert torch.equal(again, y)


@pytest.mark.parametrize("seed", [None, *SEEDS])
def test_an_explicit_dep_on_the_reader_fixes_every_seed(seed):
    x0, z = data()
    x, _, (y,) = run(fixed, seed, detect_races=True)
    assert torch.equal(y, x0 * 2.0)
    assert torch.equal(x, z)


def test_the_fix_adds_exactly_one_explicit_edge(read_dfx):
    run(fixed, 0, enable_dep_gen=True)
    assert read_dfx("deps.json")["edges"] == [
        {"src": 0, "dst": 1, "source": "explicit", "kind": None, "tensor": None}]


def test_plain_readers_stay_concurrent_and_the_writer_waits_for_both(read_dfx):
    x0, z = data()
    x, _, (y1, y2) = run(two_readers, 5, 2, enable_dep_gen=True, detect_races=True)
    assert torch.equal(y1, x0 * 2.0) and torch.equal(y2, x0 * 2.0) and torch.equal(x, z)
    edges = [(e["src"], e["dst"], e["source"]) for e in read_dfx("deps.json")["edges"]]
    assert edges == [(0, 2, "explicit"), (1, 2, "explicit")]


@pytest.mark.parametrize("seed", SEEDS)
def test_promoting_the_readers_to_inout_also_fixes_it(seed):
    x0, z = data()
    x, _, (y1, y2) = run(two_inout_readers, seed, 2, detect_races=True)
    assert torch.equal(y1, x0 * 2.0) and torch.equal(y2, x0 * 2.0) and torch.equal(x, z)


def test_but_inout_readers_are_serialized_one_after_the_other(read_dfx):
    run(two_inout_readers, 0, 2, enable_dep_gen=True)
    deps = read_dfx("deps.json")
    x_id = next(t["id"] for t in deps["tensors"] if t["name"] == "x")
    edges = [(e["src"], e["dst"], e["kind"], e["tensor"]) for e in deps["edges"]]
    # The second reader waits for the first: it became the registered writer of x.
    assert edges == [(0, 1, "RAW", x_id), (1, 2, "WAW", x_id)]
