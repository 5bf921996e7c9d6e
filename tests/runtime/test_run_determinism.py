"""Every run starts from the same device state, whatever ran before: an output declared
`pl.Out` reaches the kernels as poison even where the program reads it, and on-chip
memory is poisoned up to the kernels' high-water marks on the first call and on every
warm call, on both schedulers."""

from __future__ import annotations

import json

import pytest
import torch
from split_k_programs import K, M, N, split_k, split_k_unzeroed

import pypto.language as pl
from pypto.runtime import ChipWorker, RunConfig, load_artifact
from pypto.runtime.abi import Direction
from pypto.runtime.manifest import ON_CHIP_SPACES, Manifest

pytestmark = [
    pytest.mark.usefixtures("engine"),  # both schedulers (conftest.py)
    pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint"),  # tiny tiles
]

PLATFORM = "a2a3sim"
ALL_ONES = -1  # an INT32 of four 0xFF bytes: the on-chip poison


@pl.jit.incore
def store_scratch(out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    # A tile nothing wrote, stored: what the core's Vec buffer held.
    out = pl.store(pl.create_tile([16, 32], pl.FP32), [0, 0], out)
    return out


def _ab():
    # Multiples of 2^-4 in [0, 2]: every partial sum is exact in FP32, in any order.
    gen = torch.Generator().manual_seed(0)
    a = (torch.randint(0, 33, (M, K), generator=gen) / 16).half()
    b = (torch.randint(0, 33, (K, N), generator=gen) / 16).half()
    return a, b, a.double() @ b.double()


def _manifest(kernel, *args) -> tuple[dict, Manifest]:
    compiled = kernel.compile(*args, config=RunConfig(platform=PLATFORM))
    raw = json.loads((compiled.output_dir / "manifest.json").read_text())
    return raw, Manifest.read(compiled.output_dir)


def test_the_manifest_records_a_widened_out_as_declared_out():
    a, b, _ = _ab()
    raw, manifest = _manifest(split_k, a, b, torch.empty(M, N))
    assert raw["schema_version"] == "1.2"
    c = {p["name"]: p for p in raw["params"]}["c"]
    assert (c["direction"], c["declared_direction"]) == ("inout", "out")
    param = manifest.params[2]
    assert param.direction is Direction.INOUT and param.declared is Direction.OUT
    assert not param.copies_in and manifest.params[0].copies_in


@pytest.mark.parametrize("calls", [1, 3])
def test_a_declared_out_zeroed_then_accumulated_ignores_the_callers_data(calls):
    a, b, expected = _ab()
    for _ in range(calls):  # warm calls reuse the parameter buffers
        c = torch.full((M, N), 1e6)  # copied in, it would be added to
        split_k(a, b, c, config=RunConfig(platform=PLATFORM))
        assert torch.equal(c, expected.float())


@pytest.mark.parametrize("calls", [1, 3])
def test_a_declared_out_read_before_any_write_gives_nan(calls):
    a, b, _ = _ab()
    for _ in range(calls):
        c = torch.zeros(M, N)  # zeros would hide the missing zeroing task
        split_k_unzeroed(a, b, c, config=RunConfig(platform=PLATFORM))
        assert torch.isnan(c).all()


def test_a_declared_out_gets_poison_on_a_chip_worker_too():
    a, b, expected = _ab()
    compiled = split_k_unzeroed.compile(a, b, torch.empty(M, N),
                                        config=RunConfig(platform=PLATFORM))
    with ChipWorker(RunConfig(platform=PLATFORM)) as worker:
        for _ in range(2):
            c = torch.zeros(M, N)
            worker.run(compiled, a, b, c)
            assert torch.isnan(c).all()


def test_the_manifest_records_each_kernels_on_chip_high_water_mark():
    raw, _ = _manifest(store_scratch, torch.empty(16, 32))
    (kernel,) = raw["kernels"]
    assert kernel["on_chip"] == {**dict.fromkeys(ON_CHIP_SPACES, 0), "Vec": 16 * 32 * 4}


@pytest.mark.parametrize("workers", [1, None])
def test_a_tile_nothing_wrote_reads_nan_on_the_first_and_every_warm_call(workers):
    config = RunConfig(platform=PLATFORM, workers=workers)
    for _ in range(3):
        out = torch.zeros(16, 32)
        store_scratch(out, config=config)
        assert torch.isnan(out).all()


@pytest.mark.parametrize("workers", [1, None])
def test_on_chip_memory_a_previous_run_wrote_reads_as_poison(make_artifact, workers):
    # read_vec copies Vec bytes it never wrote; scribble_vec then leaves 0x11 bytes there.
    program = load_artifact(make_artifact("on_chip", on_chip={"Vec": 64}), platform=PLATFORM)
    for _ in range(3):
        out = torch.zeros(16, dtype=torch.int32)
        program.run([out], RunConfig(workers=workers))
        assert out.tolist() == [ALL_ONES] * 16


def test_on_chip_poison_is_the_same_on_a_chip_worker(make_artifact):
    program = load_artifact(make_artifact("on_chip", on_chip={"Vec": 64}), platform=PLATFORM)
    with ChipWorker(RunConfig(platform=PLATFORM, workers=1)) as worker:
        for _ in range(2):
            out = torch.zeros(16, dtype=torch.int32)
            worker.run(program, out)
            assert out.tolist() == [ALL_ONES] * 16


def test_a_run_poisons_the_highest_mark_of_any_kernel_else_whole_buffers(make_artifact):
    marks = {"Vec": 64, "Acc": 4096}
    program = load_artifact(make_artifact("on_chip", on_chip=marks), platform=PLATFORM)
    assert program.manifest.on_chip_poison == tuple(marks.get(s, 0) for s in ON_CHIP_SPACES)
    unmarked = load_artifact(make_artifact("on_chip"), platform=PLATFORM).manifest
    assert unmarked.on_chip_poison == tuple(unmarked.capacities[s] for s in ON_CHIP_SPACES)
