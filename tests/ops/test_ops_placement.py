"""On-chip placement: every buffer's capacity is checked per backend, data paths between
buffers are backend facts, and misplaced operands are errors that say what to do."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.ir import CapacityError, LoweringError
from pypto.runtime import RunConfig


@pl.jit.incore
def big_left(a: pl.Tensor[[256, 256], pl.FP16], b: pl.Tensor[[256, 16], pl.FP16],
             c: pl.Out[pl.Tensor[[256, 16], pl.FP32]]):
    a_mat = pl.load(a, [0, 0], [256, 256], target_memory=pl.Mem.Mat)
    b_mat = pl.load(b, [0, 0], [256, 16], target_memory=pl.Mem.Mat)
    c = pl.store(pl.matmul(pl.move(a_mat, pl.Mem.Left), pl.move(b_mat, pl.Mem.Right)), [0, 0], c)
    return c


@pl.jit.incore
def big_right(a: pl.Tensor[[16, 256], pl.FP16], b: pl.Tensor[[256, 256], pl.FP16],
              c: pl.Out[pl.Tensor[[16, 256], pl.FP32]]):
    a_mat = pl.load(a, [0, 0], [16, 256], target_memory=pl.Mem.Mat)
    b_mat = pl.load(b, [0, 0], [256, 256], target_memory=pl.Mem.Mat)
    c = pl.store(pl.matmul(pl.move(a_mat, pl.Mem.Left), pl.move(b_mat, pl.Mem.Right)), [0, 0], c)
    return c


@pl.jit.incore
def big_acc(a: pl.Tensor[[256, 64], pl.FP16], b: pl.Tensor[[64, 256], pl.FP16],
            c: pl.Out[pl.Tensor[[256, 256], pl.FP32]]):
    a_mat = pl.load(a, [0, 0], [256, 64], target_memory=pl.Mem.Mat)
    b_mat = pl.load(b, [0, 0], [64, 256], target_memory=pl.Mem.Mat)
    c = pl.store(pl.matmul(pl.move(a_mat, pl.Mem.Left), pl.move(b_mat, pl.Mem.Right)), [0, 0], c)
    return c


@pl.jit.incore
def big_mat(a: pl.Tensor[[1024, 512], pl.FP16], c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    whole = pl.load(a, [0, 0], [1024, 512], target_memory=pl.Mem.Mat)
    lhs = pl.move(whole[0:16, 0:16], pl.Mem.Left)
    rhs = pl.move(whole[16:32, 0:16], pl.Mem.Right)
    c = pl.store(pl.matmul(lhs, rhs), [0, 0], c)
    return c


@pl.jit.incore
def big_vec(a: pl.Tensor[[512, 512], pl.FP32], c: pl.Out[pl.Tensor[[512, 512], pl.FP32]]):
    c = pl.store(pl.exp(pl.load(a, [0, 0], [512, 512])), [0, 0], c)
    return c


def _h(*shape):
    return torch.zeros(*shape, dtype=torch.float16)


CASES = {
    "Left": (big_left, (_h(256, 256), _h(256, 16), torch.zeros(256, 16)), "move_0", 65536),
    "Right": (big_right, (_h(16, 256), _h(256, 256), torch.zeros(16, 256)), "move_1", 65536),
    "Acc": (big_acc, (_h(256, 64), _h(64, 256), torch.zeros(256, 256)), "matmul_0", 131072),
    "Mat": (big_mat, (_h(1024, 512), torch.zeros(16, 16)), "whole", 524288),
    "Vec": (big_vec, (torch.zeros(512, 512), torch.zeros(512, 512)), "load_0", 196608),
}


@pytest.mark.parametrize("space", list(CASES))
def test_a_tile_that_does_not_fit_names_the_tile_and_the_capacity(space):
    kernel, args, tile, capacity = CASES[space]
    with pytest.raises(CapacityError) as info:
        kernel.lower(*args, config=RunConfig(platform="a2a3sim"))
    message = str(info.value)
    assert f"does not fit the {space} buffer: {capacity} bytes" in message, message
    assert f"tile `{tile}`" in message and "test_ops_placement.py:" in message


def test_capacities_are_per_backend_acc_is_larger_on_ascend950():
    kernel, args, _, _ = CASES["Acc"]
    lowered = kernel.lower(*args, config=RunConfig(platform="a5sim"))  # 256 KiB of L0C
    assert "pl.Mem.Acc" in lowered.as_python()


@pl.jit.incore
def load_into_left(a: pl.Tensor[[16, 16], pl.FP16], c: pl.Out[pl.Tensor[[16, 16], pl.FP16]]):
    t = pl.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Left)
    c = pl.store(pl.move(t, pl.Mem.Vec), [0, 0], c)
    return c


def test_global_memory_reaches_only_vec_and_mat():
    with pytest.raises(LoweringError) as info:
        load_into_left.lower(_h(16, 16), _h(16, 16))
    assert "Vec or Mat" in str(info.value) and "pl.move" in str(info.value)


@pl.jit.incore
def vector_op_on_mat(a: pl.Tensor[[16, 16], pl.FP16], c: pl.Out[pl.Tensor[[16, 16], pl.FP16]]):
    t = pl.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
    c = pl.store(pl.add(t, t), [0, 0], c)
    return c


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_vector_operators_read_vec_tiles(platform):
    with pytest.raises(LoweringError) as info:
        vector_op_on_mat.lower(_h(16, 16), _h(16, 16), config=RunConfig(platform=platform))
    message = str(info.value)
    assert "pl.add reads `lhs` (t) from Mat, but it must be in Vec" in message
    # The move it suggests is one: a Mat tile crosses to Vec through global memory.
    assert "hint: pl.move(`t`, pl.Mem.Vec) first" in message


@pl.jit.incore
def move_vec_to_left(a: pl.Tensor[[16, 16], pl.FP16], c: pl.Out[pl.Tensor[[16, 16], pl.FP16]]):
    t = pl.load(a, [0, 0], [16, 16])
    c = pl.store(pl.move(pl.move(t, pl.Mem.Left), pl.Mem.Vec), [0, 0], c)
    return c


def test_moves_follow_the_backend_data_paths():
    # Vec -> Left crosses to the cube unit through global memory (TransferCubeToVector);
    # nothing moves a Left tile back.
    with pytest.raises(LoweringError) as info:
        move_vec_to_left.lower(_h(16, 16), _h(16, 16))
    message = str(info.value)
    assert "pl.move from Left to Vec is not a data path of Ascend910B" in message
    assert "Mat->Left" in message
