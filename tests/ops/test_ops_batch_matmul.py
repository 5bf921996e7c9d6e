"""Batched matmul: pl.batch_matmul on [B, M, K] tiles and pl.matmul of [B, M, K] tensors
in a pl.at block are one 2-D matmul per batch, bit for bit (FP32 sums in K order), on both
simulators and in the torch semantics; a [B, rows, cols] tile is B [rows, cols] tiles."""

from __future__ import annotations

import pytest
import torch
from batch_matmul_programs import (
    batch_elementwise,
    int8,
    k_order,
    quantized,
    tensor_batch_matmul,
    tensor_batch_matmul_fp16,
    tensor_batch_matmul_transposed,
    tile_batch_matmul,
    tile_broadcasts,
)
from located_errors import raised_by
from sim_and_torch import sim_and_torch

from pypto import ir
from pypto.debug import torch_runtime
from pypto.ir import LoweringError, TypeCheckError
from pypto.ir.options import VerificationLevel
from pypto.runtime import KernelError, RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

PLATFORMS = ["a2a3sim", "a5sim"]


def _randn(*shape, seed: int, dtype=torch.float16) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_batch_matmul_of_tiles_is_each_batch_s_matmul_bit_for_bit(platform):
    a, b = _randn(2, 16, 32, seed=1), _randn(2, 32, 48, seed=2)
    sim, host = sim_and_torch(tile_batch_matmul, [a, b, torch.zeros(2, 16, 48)], platform)
    want = k_order(a, b)
    assert torch.equal(sim[2], want) and torch.equal(host[2], want)
    # The registry's torch semantics of the operator itself, and torch's own bmm where
    # every sum is exact.
    assert torch.equal(torch_runtime.batch_matmul(a, b), want)
    qa, qb = quantized(2, 16, 32, seed=3), quantized(2, 32, 48, seed=4)
    c = torch.zeros(2, 16, 48)
    tile_batch_matmul(qa, qb, c, config=RunConfig(platform=platform))
    assert torch.equal(c, torch.bmm(qa.float(), qb.float()))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_batch_of_one_or_a_matrix_stands_for_every_batch(platform):
    a1, b3 = _randn(1, 16, 32, seed=5, dtype=torch.bfloat16), _randn(3, 32, 16, seed=6,
                                                                     dtype=torch.bfloat16)
    w = _randn(16, 32, seed=7, dtype=torch.bfloat16)
    args = [a1, b3, w, torch.zeros(3, 16, 16), torch.zeros(2, 32, 32)]
    sim, host = sim_and_torch(tile_broadcasts, args, platform)
    want_c2 = k_order(b3[1:], w)  # b3's batches 1, 2 as [32, 16] Left tiles
    for got in (sim, host):
        assert torch.equal(got[3], k_order(a1, b3))
        assert torch.equal(got[4], want_c2)
    assert torch.equal(torch_runtime.batch_matmul(a1, b3), k_order(a1, b3))
    assert torch.equal(torch_runtime.batch_matmul(b3[1:], w), want_c2)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_rank_3_tiles_work_batch_by_batch(platform):
    x, y = _randn(2, 16, 32, seed=8, dtype=torch.float32), _randn(2, 16, 32, seed=9,
                                                                 dtype=torch.float32)
    args = [x, y, torch.zeros(2, 16, 32), torch.zeros(1, 16, 32)]
    sim, host = sim_and_torch(batch_elementwise, args, platform)
    for got in (sim, host):
        assert torch.equal(got[2], torch.maximum((x + y) * 0.5, x))
    # exp of batch 1: the simulator's bits are the torch semantics'.
    assert torch.equal(sim[3], host[3])
    assert torch.equal(host[3][0], torch_runtime.exp(x[1]))


def test_a_rank_3_tile_is_b_placed_tiles_and_prints_and_parses_back():
    program = tile_batch_matmul.frontend(*(torch.zeros(2, 16, 32).half(),
                                           torch.zeros(2, 32, 48).half(), torch.zeros(2, 16, 48)))
    compiled = ir.compile(program, dump_passes=False, platform="a2a3sim",
                          verification_level=VerificationLevel.ROUNDTRIP)
    a, b = _randn(2, 16, 32, seed=10), _randn(2, 32, 48, seed=11)
    c = torch.zeros(2, 16, 48)
    compiled(a, b, c)
    assert torch.equal(c, k_order(a, b))
    text = tile_batch_matmul.lower(a, b, c, config=RunConfig(platform="a2a3sim")).as_python()
    assert "pl.batch_matmul(" not in text and "pl.Tile[[2," not in text
    assert text.count("pl.matmul(") == 2
    assert "pl.load(a, [1, 0, 0], [16, 32]" in text  # batch 1 of a, a [16, 32] tile


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("a_shape", "b_shape"), [
    ((3, 16, 32), (3, 32, 24)),
    ((1, 16, 32), (4, 32, 24)),  # a batch of one
    ((4, 16, 32), (32, 24)),  # a matrix
    ((2, 256, 512), (2, 512, 192)),  # walked in [TM, TN] blocks within each batch
])
def test_tensor_matmul_of_rank_3_tensors_is_batched(platform, a_shape, b_shape):
    a, b = _randn(*a_shape, seed=12), _randn(*b_shape, seed=13)
    want = k_order(a, b)
    sim, host = sim_and_torch(tensor_batch_matmul, [a, b, torch.zeros(want.shape)], platform)
    assert torch.equal(sim[2], want) and torch.equal(host[2], want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensor_batch_matmul_keeps_out_dtype_and_transposes(platform):
    a, b = _randn(3, 16, 32, seed=14), _randn(3, 32, 48, seed=15)
    c = torch.zeros(3, 16, 48, dtype=torch.float16)
    tensor_batch_matmul_fp16(a, b, c, config=RunConfig(platform=platform))
    assert torch.equal(c, k_order(a, b).half())  # one rounding at the end
    at, bt = a.transpose(1, 2).contiguous(), b.transpose(1, 2).contiguous()
    c = torch.zeros(3, 16, 48)
    tensor_batch_matmul_transposed(at, bt, c, config=RunConfig(platform=platform))
    assert torch.equal(c, k_order(a, b))
    text = tensor_batch_matmul_transposed.lower(at, bt, c).as_python()
    assert "pl.range(0, 3, 1)" in text and "a_trans=True" in text


def test_int8_batches_accumulate_in_int32():
    a, b = int8(2, 16, 32, seed=16), int8(2, 32, 16, seed=17)
    sim, host = sim_and_torch(tensor_batch_matmul, [a, b, torch.zeros(2, 16, 16,
                                                                      dtype=torch.int32)],
                              "a2a3sim")
    want = torch.matmul(a.long(), b.long()).int()
    assert torch.equal(sim[2], want) and torch.equal(host[2], want)
    assert torch.equal(torch_runtime.batch_matmul(a, b), want)


_TILE_KERNEL = '''
import pypto.language as pl


@pl.jit.incore
def kernel(x: pl.Tensor[[2, 16, 32], pl.FP16], y: pl.Tensor[[3, 32, 16], pl.FP16],
           z: pl.Tensor[[2, 16, 32], pl.BF16], out: pl.Out[pl.Tensor[[2, 16, 16], pl.FP32]]):
    xl = pl.move(pl.load(x, [0, 0, 0], [2, 16, 32], target_memory=pl.Mem.Mat), pl.Mem.Left)
    zl = pl.move(pl.load(z, [0, 0, 0], [2, 16, 32], target_memory=pl.Mem.Mat), pl.Mem.Left)
    yr = pl.move(pl.load(y, [0, 0, 0], [3, 32, 16], target_memory=pl.Mem.Mat), pl.Mem.Right)
    y2 = pl.move(pl.load(y, [0, 0, 0], [2, 32, 16], target_memory=pl.Mem.Mat), pl.Mem.Right)
    {statement}
    return out
'''

# case -> (statement, error class, what the message says)
_REFUSED = {
    "batches": ("r = pl.batch_matmul(xl, yr)", TypeCheckError, "the batch dimensions differ"),
    "inner": ("r = pl.batch_matmul(xl, xl)", TypeCheckError, "inner dimensions differ"),
    "dtypes": ("r = pl.batch_matmul(zl, y2)", TypeCheckError, "FP16"),
    "tensors": ("r = pl.batch_matmul(x, y)", TypeCheckError, "on tensors, pl.matmul"),
    "matmul_of_batches": ("r = pl.matmul(xl, y2)", TypeCheckError, "pl.batch_matmul"),
    "two_matrices": ("r = pl.batch_matmul(pl.load(x, [0, 0, 0], [16, 32]), "
                     "pl.load(y, [0, 0, 0], [32, 16]))", TypeCheckError, "pl.matmul"),
    "window_rank": ("r = pl.load(x, [0, 0], [16, 32])", TypeCheckError, "[b, row, col]"),
    "not_per_batch": ("r = pl.reshape(pl.load(x, [0, 0, 0], [2, 16, 32]), [2, 32, 16])",
                      LoweringError, "does not work batch by batch"),
    "partial_batches": ("r = pl.add(pl.load(x, [0, 0, 0], [2, 16, 32], valid_shape=[1, 16, "
                        "32]), 1.0)", LoweringError, "valid in every batch"),
}


@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_what_batched_matmul_refuses_is_an_error_at_the_line(case):
    statement, cls, message = _REFUSED[case]
    args = (torch.zeros(2, 16, 32).half(), torch.zeros(3, 32, 16).half(),
            torch.zeros(2, 16, 32).bfloat16(), torch.zeros(2, 16, 16))
    lower = cls is LoweringError
    error, lines = raised_by(_TILE_KERNEL.format(statement=statement),
                             lambda ns: (ns["kernel"].lower if lower else ns["kernel"].frontend)(
                                 *args), cls)
    assert message in str(error)
    assert lines[error.span.line - 1].strip().startswith("r = ")


_TENSOR_KERNEL = '''
import pypto.language as pl


@pl.jit
def entry(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b)
    return c
'''


@pytest.mark.parametrize(("a_shape", "b_shape", "message"), [
    ((2, 16, 32), (3, 32, 16), "the batch dimensions differ"),
    ((2, 16, 32), (2, 16, 16), "inner dimensions differ"),
    ((2, 2, 16, 32), (2, 2, 32, 16), "[M, K] or [B, M, K] operands"),
])
def test_tensor_batch_matmul_refusals_name_the_line(a_shape, b_shape, message):
    error, lines = raised_by(_TENSOR_KERNEL, lambda ns: ns["entry"].frontend(
        torch.zeros(a_shape).half(), torch.zeros(b_shape).half(), torch.zeros(2, 16, 16)),
        TypeCheckError)
    assert message in str(error)
    assert lines[error.span.line - 1].strip().startswith("c[:] = pl.matmul")


_BATCH_AT_RUN_TIME = '''
import pypto.language as pl


@pl.jit.incore
def kernel(x: pl.Tensor[[2, 16, 32], pl.FP32], n: pl.Scalar[pl.INDEX],
           out: pl.Out[pl.Tensor[[2, 16, 32], pl.FP32]]):
    t = pl.load(x, [n, 0, 0], [16, 32])
    out = pl.store(t, [0, 0, 0], out)
    return out
'''


def test_a_batch_outside_the_tensor_is_a_fault_naming_it():
    x, out = torch.randn(2, 16, 32), torch.zeros(2, 16, 32)

    def run(namespace):
        kernel = namespace["kernel"]
        kernel(x, 1, out, config=RunConfig(platform="a2a3sim"))
        assert torch.equal(out[0], x[1])
        kernel(x, 2, out, config=RunConfig(platform="a2a3sim"))

    error, _ = raised_by(_BATCH_AT_RUN_TIME, run, KernelError)
    # The task is handed the window x[n:n + 1], cut back to x's end at run time: no batch.
    assert "tload of batch 0 lies outside the tensor's 0 batches" in str(error)
