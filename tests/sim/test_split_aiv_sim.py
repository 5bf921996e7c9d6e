"""Lane regions (`pl.split_aiv`, `pl.aiv_shard`, `pl.aic_gather`) on the simulators: the
kernel runs as its cube and vector sides at once, the crossings through the pipe; each
mode's values are bit for bit torch's and the torch semantics' (pypto.debug)."""

from __future__ import annotations

import pytest
import torch
from pipe_programs import parse
from split_aiv_programs import (
    LANES_ONLY,
    TWO_REGIONS,
    N,
    round_trip_source,
    shard_out_rows,
    shard_source,
)

from pypto import ir
from pypto.debug.torch_codegen import load_entry, torch_codegen

MODES = ["UP_DOWN", "LEFT_RIGHT", "NONE"]


def _run(source: str, args: list[torch.Tensor], platform: str) -> tuple:
    """`args` after the simulator's run and after the torch semantics' run."""
    program = parse(source)
    host = [a.clone() for a in args]
    load_entry(torch_codegen(program), program.entry)(*host)
    ir.compile(program, dump_passes=False, platform=platform)(*args)
    return args[-1], host[-1]


def _shard_args(mode: str) -> list[torch.Tensor]:
    torch.manual_seed(len(mode))
    return [torch.randn(N * 16, 32, dtype=torch.float16), torch.randn(32, 16, dtype=torch.float16),
            torch.randn(16, 16), torch.zeros(shard_out_rows(mode), 16)]


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("mode", MODES)
def test_a_shard_reads_the_cubes_tile_on_each_lane(mode, platform):
    a, b, bias, out = args = _shard_args(mode)
    sim, host = _run(shard_source(mode), args, platform)
    want = ((a.float() @ b.float()).reshape(N, 16, 16) + bias).reshape(N * 16, 16)
    if mode == "NONE":  # each lane reads the whole product: two copies
        want = torch.cat([want, want])
    assert torch.equal(sim, want)
    assert torch.equal(host, want)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("mode", MODES)
def test_a_gather_hands_the_lanes_tile_back_to_the_cube(mode, platform):
    torch.manual_seed(7)
    a, b = torch.randn(N * 16, 32, dtype=torch.float16), torch.randn(32, 16, dtype=torch.float16)
    w = torch.randn(16, 16, dtype=torch.float16)
    sim, host = _run(round_trip_source(mode), [a, b, w, torch.zeros(N * 16, 16)], platform)
    doubled = ((a.float() @ b.float()) * 2).half()
    want = (doubled.reshape(N, 16, 16).float() @ w.float()).reshape(N * 16, 16)
    assert torch.equal(sim, want)
    assert torch.equal(host, want)


def test_runs_give_the_same_bits():
    compiled = ir.compile(parse(round_trip_source("UP_DOWN")), dump_passes=False,
                          platform="a2a3sim")
    torch.manual_seed(3)
    a, b = torch.randn(N * 16, 32, dtype=torch.float16), torch.randn(32, 16, dtype=torch.float16)
    w = torch.randn(16, 16, dtype=torch.float16)
    outs = []
    for _ in range(4):
        out = torch.zeros(N * 16, 16)
        compiled(a, b, w, out)
        outs.append(out)
    assert all(torch.equal(o, outs[0]) for o in outs)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_two_regions_of_two_modes_in_a_branch(platform):
    torch.manual_seed(11)
    a, b = torch.randn(64, 32, dtype=torch.float16), torch.randn(32, 16, dtype=torch.float16)
    w = torch.randn(16, 16, dtype=torch.float16)
    program = parse(TWO_REGIONS)
    assert "id=0" in program.as_python() and "id=1" in program.as_python()
    sim, host = _run(TWO_REGIONS, [a, b, w, torch.zeros(64, 16)], platform)
    products = (a.float() @ b.float()).half().reshape(4, 16, 16).float() @ w.float()
    # Only the odd products are stored (the even rows of a pl.Out are never written).
    assert torch.equal(sim.reshape(4, 16, 16)[1::2], products[1::2])
    assert torch.equal(host.reshape(4, 16, 16)[1::2], products[1::2])


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_none_region_runs_its_body_on_both_lanes(platform):
    x = torch.randn(32, 16)
    sim, host = _run(LANES_ONLY, [x, torch.zeros(32, 16)], platform)
    assert torch.equal(sim, x + x) and torch.equal(host, x + x)
