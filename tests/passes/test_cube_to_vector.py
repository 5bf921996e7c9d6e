"""A Mat tile moved to Vec in a core group's kernel is a transfer from the cube unit to the
vector unit (upstream's TPUSH/TPOP): it goes through a scratch tensor the orchestration
allocates, stored from L1 and loaded into the UB, bit-exact on both simulators; refused at
the move's line where it has no meaning here."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from sim_and_torch import sim_and_torch

import pypto.language as pl
from pypto.codegen.cpp import generate
from pypto.ir.errors import LoweringError
from pypto.platform import get_platform
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")  # small tiles

HERE = __file__
SIMS = ["a2a3sim", "a5sim"]


@pl.jit
def matmul_assembled(x: pl.Tensor, a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        target = pl.load(x, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat)
        a_mat = pl.load(a, [0, 0], [32, 16], target_memory=pl.MemorySpace.Mat)
        b_mat = pl.load(b, [0, 0], [16, 16], target_memory=pl.MemorySpace.Mat)
        acc = pl.matmul(pl.move(a_mat, target_memory=pl.MemorySpace.Left),
                        pl.move(b_mat, target_memory=pl.MemorySpace.Right))
        result = pl.tile.assemble(target, acc, [0, 16])
        moved = pl.move(result, target_memory=pl.MemorySpace.Vec)
        pl.store(pl.add(moved, moved), [0, 0], y)
    return y


@pl.jit
def loaded_then_moved(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64], target_memory=pl.MemorySpace.Mat)
        v = pl.move(t, target_memory=pl.MemorySpace.Vec)
        pl.store(pl.mul(v, 3.0), [0, 0], y)
    return y


@pl.jit
def partial_then_moved(x: pl.Tensor, n: pl.Scalar[pl.INDEX], y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64], valid_shape=[n, 48], target_memory=pl.MemorySpace.Mat)
        v = pl.move(t, target_memory=pl.MemorySpace.Vec)
        pl.store(pl.add(v, 1.0), [0, 0], y)
    return y


@pl.jit
def moved_in_blocks(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.spmd(2):
        t = pl.load(x, [0, 0], [32, 64], target_memory=pl.MemorySpace.Mat)
        v = pl.move(t, target_memory=pl.MemorySpace.Vec)
        pl.store(v, [0, 0], y)
    return y


def _randn(*shape, seed=16):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("platform", SIMS)
def test_a_matmul_assembled_into_mat_reaches_the_vector_unit(platform):
    x, a, b = _randn(32, 32), _randn(32, 16, seed=1), _randn(16, 16, seed=2)
    args = [x, a, b, torch.zeros(32, 32)]
    (_, _, _, y), (_, _, _, y_torch) = sim_and_torch(matmul_assembled, args, platform)
    assert torch.equal(y, y_torch)
    assert torch.equal(y[:, :16], x[:, :16] + x[:, :16])
    assert torch.allclose(y[:, 16:], 2 * (a @ b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("platform", SIMS)
def test_a_tile_loaded_into_mat_reaches_the_vector_unit(platform):
    x, y = _randn(32, 64), torch.zeros(32, 64)
    loaded_then_moved(x, y, config=RunConfig(platform=platform))
    assert torch.equal(y, x * 3.0)


@pytest.mark.parametrize("platform", SIMS)
def test_only_the_valid_region_crosses(platform):
    x, y = _randn(32, 64), torch.zeros(32, 64)
    partial_then_moved(x, 20, y, config=RunConfig(platform=platform))
    assert torch.equal(y[:20, :48], x[:20, :48] + 1.0)
    # the rest of `y` is never written: it keeps the NaN an output reaches the device with
    assert y[20:].isnan().all() and y[:, 48:].isnan().all()


def test_the_transfer_goes_through_a_scratch_tensor_the_orchestration_allocates():
    text = loaded_then_moved.lower(_randn(32, 64), torch.zeros(32, 64)).as_python()
    assert "t_to_vec_0: pl.Out[pl.Tensor[[32, 64], pl.FP32]]" in text
    assert "t_to_vec_0: pl.Tensor[[32, 64], pl.FP32] = pl.store(t, [0, 0], t_to_vec_0)" in text
    assert "pl.load(t_to_vec_0, [0, 0], [32, 64])" in text
    assert "= pl.create_tensor([32, 64], pl.FP32)" in text


def _move_line(fn, text="pl.move(t, target_memory=pl.MemorySpace.Vec)") -> str:
    source = Path(HERE).read_text().splitlines()
    first = fn.fn.__code__.co_firstlineno
    line = next(i for i in range(first, len(source)) if text in source[i - 1])
    return f"{HERE}:{line}"


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_device_code_refuses_the_transfer_at_the_move(platform):
    lowered = loaded_then_moved.lower(_randn(32, 64), torch.zeros(32, 64),
                                      config=RunConfig(platform=platform))
    with pytest.raises(LoweringError) as info:
        generate(lowered, platform=get_platform(platform))
    message = str(info.value)
    assert message.startswith(_move_line(loaded_then_moved))
    assert "cube unit to the vector unit" in message and platform in message


def test_a_transfer_in_a_kernel_of_several_blocks_is_refused_at_the_move():
    with pytest.raises(LoweringError) as info:
        moved_in_blocks.lower(_randn(32, 64), torch.zeros(32, 64))
    message = str(info.value)
    assert message.startswith(_move_line(moved_in_blocks))
    assert "several blocks" in message

