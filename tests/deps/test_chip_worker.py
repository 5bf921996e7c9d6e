"""ChipWorker: resident tensors are bound in place, programs register once, close frees all."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.runtime import ArtifactError, ChipWorker, PyptoRuntimeError, RunConfig

pytestmark = pytest.mark.usefixtures("engine")  # both schedulers (conftest.py)

R, C = 32, 128


@pl.jit
def axpy(x: pl.Tensor[[R, C], pl.FP32], acc: pl.InOut[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc[:] = pl.add(acc, pl.mul(x, 2.0))
    return acc


def compiled():
    return axpy.compile(torch.zeros(R, C), torch.zeros(R, C))


def test_resident_tensors_are_bound_in_place_across_a_hot_loop(read_dfx):
    x_host = torch.randn(R, C)
    with ChipWorker(RunConfig(enable_dep_gen=True)) as worker:
        acc = worker.alloc_tensor([R, C])
        assert acc.isnan().all(), "fresh device memory is poisoned"
        acc.zero_()
        step = worker.register(compiled())
        for _ in range(5):
            result = step(x_host, acc)
        assert result is acc
        assert torch.allclose(acc, x_host * 10.0)
        origins = {t["name"]: t["origin"] for t in read_dfx("deps.json")["tensors"]}
        assert origins == {"x": "param", "acc": "resident"}


def test_a_resident_input_is_read_where_it_lives_not_copied():
    with ChipWorker() as worker:
        x = worker.alloc_tensor([R, C])
        acc = worker.alloc_tensor([R, C])
        acc.zero_()
        x.fill_(1.0)
        worker.run(compiled(), x, acc)
        x.fill_(3.0)  # the next run sees this write: x was never snapshotted
        worker.run(compiled(), x, acc)
        assert torch.equal(acc, torch.full((R, C), 8.0))


def test_host_tensors_still_work_and_are_copied_back():
    with ChipWorker() as worker:
        x, acc = torch.ones(R, C), torch.zeros(R, C)
        worker.run(compiled(), x, acc)
        assert torch.equal(acc, torch.full((R, C), 2.0))


def test_register_returns_one_handle_per_artifact():
    with ChipWorker() as worker:
        program = compiled()
        assert worker.register(program) is worker.register(program.output_dir)


def test_free_tensor_releases_a_resident_tensor():
    with ChipWorker() as worker:
        t = worker.alloc_tensor([4, 4], torch.int32)
        assert t.dtype == torch.int32 and t in worker.resident_tensors
        worker.free_tensor(t)
        assert worker.resident_tensors == ()
        with pytest.raises(ValueError, match="not allocated by this ChipWorker"):
            worker.free_tensor(t)


def test_a_closed_worker_refuses_further_use():
    worker = ChipWorker()
    worker.close()
    with pytest.raises(PyptoRuntimeError, match="closed"):
        worker.alloc_tensor([4, 4])
    with pytest.raises(PyptoRuntimeError, match="closed"):
        worker.run(compiled(), torch.zeros(R, C), torch.zeros(R, C))


def test_a_program_of_another_platform_is_refused():
    program = compiled()
    with ChipWorker(RunConfig(platform="a5sim")) as worker, \
            pytest.raises(ArtifactError, match="platform mismatch"):
        worker.register(program)
