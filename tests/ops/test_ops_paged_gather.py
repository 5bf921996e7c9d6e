"""Upstream's pl.paged_gather (pl.tensor.paged_gather) in a pl.at block, its Vec form: row r
of the result is row block_table[idx // block_size] * block_size + idx % block_size of the
paged pool, idx = indices[0, r].  Lowered to Vec tile code (the indices shifted and masked,
the physical blocks and then the rows gathered by MGATHER); both simulators agree with
torch's meaning and with the registry's torch semantics bit for bit on every dtype upstream
takes; indices whose block or row lies outside the table or the pool are KernelErrors; the
L1 form and what the lowering cannot mean are refused at their line."""

from __future__ import annotations

import pytest
import torch
from located_errors import raised_by
from sim_and_torch import dtype_sweep, sim_and_torch

import pypto.language as pl
from pypto.ir import LoweringError, TypeCheckError
from pypto.runtime import KernelError

pytestmark = [pytest.mark.small_tiles,
              pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")]

POOL_ROWS, D, BLOCK, N = 64, 32, 8, 16  # 8 physical blocks of 8 rows; 16 indices
DTYPES = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16,
          "INT8": torch.int8}
TABLE = torch.tensor([[7, 2, 5, 0, 3]], dtype=torch.int32)  # logical block -> physical
# Logical rows across every logical block, a repeat, the first and the last (39 = 4 * 8 + 7).
INDICES = torch.tensor([[0, 7, 8, 15, 16, 23, 24, 31, 32, 39, 9, 9, 1, 30, 17, 38]],
                       dtype=torch.int32)


def pool(dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        t = torch.randn(POOL_ROWS, D, generator=g) * 100
        t.view(-1)[:4] = torch.tensor([-0.0, float("inf"), float("nan"), 1e-30])
        return t.to(dtype)
    return torch.randint(-128, 128, (POOL_ROWS, D), generator=g, dtype=torch.int64).to(dtype)


def gathered(src: torch.Tensor, indices: torch.Tensor, table: torch.Tensor,
             block: int) -> torch.Tensor:
    """torch's meaning, row by row as upstream writes it."""
    rows = [int(table.reshape(-1)[i // block]) * block + i % block
            for i in indices.reshape(-1).tolist()]
    return src[rows].clone()


def same(got: torch.Tensor, want: torch.Tensor) -> bool:
    return got.dtype == want.dtype and torch.equal(got.view(torch.uint8), want.view(torch.uint8))


@pl.jit
def gather(src: pl.Tensor, indices: pl.Tensor, table: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.paged_gather(src, indices, table, BLOCK, D, N, space=pl.Mem.Vec)
    return out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("dtype", dtype_sweep(DTYPES))
def test_paged_gather_reads_each_index_through_the_block_table(dtype, platform):
    src = pool(DTYPES[dtype], 1)
    args = [src, INDICES, TABLE, torch.zeros(N, D, dtype=DTYPES[dtype])]
    sim, host = sim_and_torch(gather, args, platform)
    want = gathered(src, INDICES, TABLE, BLOCK)
    assert same(sim[3], want) and same(host[3], sim[3])
    assert same(sim[3][9], src[3 * BLOCK + 7])  # logical 39: block 4 (physical 3), slot 7


@pl.jit
def gather_then_add(src: pl.Tensor, indices: pl.Tensor, table: pl.Tensor,
                    bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        kv = pl.tensor.paged_gather(src, indices, table, block_size=1, size=D, max_indices=N,
                                    space=pl.Mem.Vec, is_b_matrix=True)
        out[:] = pl.add(kv, bias)
    return out


def test_the_result_is_a_tensor_value_later_operators_read_and_block_size_one_is_the_table():
    src, bias = pool(torch.float32, 2), torch.randn(N, D)
    table = torch.randperm(POOL_ROWS, generator=torch.Generator().manual_seed(3))
    table = table.to(torch.int32).reshape(4, 16)  # read flat
    args = [src, INDICES, table, bias, torch.zeros(N, D)]
    sim, host = sim_and_torch(gather_then_add, args, "a2a3sim")
    want = gathered(src, INDICES, table, 1) + bias
    assert same(sim[4], want) and same(host[4], sim[4])  # the pool holds a NaN


def test_paged_gather_agrees_with_its_torch_semantics():
    from pypto.debug.torch_runtime import paged_gather

    src = pool(torch.float32, 4)
    got = paged_gather(src, INDICES, TABLE, BLOCK, D, N)
    assert same(got, gathered(src, INDICES, TABLE, BLOCK))


@pytest.mark.parametrize(("index", "outside"), [
    (40, r"index 5 lies outside \[0, 5\)"),  # logical block 5 of a 5-block table
    (-1, r"index -1 lies outside \[0, 5\)"),  # block -1 (floor division), read unsigned
])
def test_an_index_whose_block_is_outside_the_table_is_a_kernel_error(index, outside):
    indices = INDICES.clone()
    indices[0, 3] = index
    with pytest.raises(KernelError, match=outside):
        gather(torch.zeros(POOL_ROWS, D), indices, TABLE, torch.zeros(N, D))


def test_a_physical_row_outside_the_pool_is_a_kernel_error():
    table = TABLE.clone()
    table[0, 1] = 8  # physical block 8: rows 64..71 of a 64-row pool
    with pytest.raises(KernelError, match=r"index 6\d lies outside \[0, 64\)"):
        gather(torch.zeros(POOL_ROWS, D), INDICES, table, torch.zeros(N, D))


@pytest.mark.parametrize(("statement", "cls", "message"), [
    ("kv = pl.paged_gather(p, i, t, 8, 32, 16)", TypeCheckError,
     "space=pl.Mem.Mat (the default"),
    ("kv = pl.tensor.paged_gather(p, i, t, 8, 32, 16, space=pl.Mem.Mat)", TypeCheckError,
     "does not exist here"),
    ("kv = pl.paged_gather(p, i, t, 8, 32, 16, space=pl.Mem.Vec, is_trans=True)",
     TypeCheckError, "is_trans=True"),
    ("kv = pl.paged_gather(p, i, t, 6, 32, 16, space=pl.Mem.Vec)", TypeCheckError,
     "block_size=6 must be a power of two"),
    ("kv = pl.paged_gather(p, i, t, 8, 16, 16, space=pl.Mem.Vec)", TypeCheckError,
     "only whole rows are gathered here"),
    ("kv = pl.paged_gather(p, i, t, 8, 32, 16, space=pl.Mem.Vec, col_off=16)",
     TypeCheckError, "col_off=16"),
    ("kv = pl.paged_gather(p, i, t, 8, 32, 32, space=pl.Mem.Vec)", TypeCheckError,
     "max_indices (32) must be the number of indices (16)"),
    ("kv = pl.paged_gather(p, i1, t, 8, 32, 16, space=pl.Mem.Vec)", TypeCheckError,
     "indices must be an INT32 tensor [1, n]"),
    ("kv = pl.paged_gather(p, i, t, 0, 32, 16, space=pl.Mem.Vec)", TypeCheckError,
     "block_size must be a positive integer constant"),
    ("kv = pl.paged_gather(pl.add(p, 1.0), i, t, 8, 32, 16, space=pl.Mem.Vec)",
     LoweringError, "a value computed in the kernel"),
])
def test_a_bad_paged_gather_is_refused_at_its_line(statement, cls, message):
    source = f'''
import pypto.language as pl

@pl.jit
def entry(p: pl.Tensor[[64, 32], pl.FP32], i: pl.Tensor[[1, 16], pl.INT32],
          i1: pl.Tensor[[16], pl.INT32], t: pl.Tensor[[1, 5], pl.INT32],
          out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        {statement}
        out[:] = pl.add(kv, 1.0)
    return out
'''
    args = (torch.zeros(64, 32), torch.zeros(1, 16, dtype=torch.int32),
            torch.zeros(16, dtype=torch.int32), torch.zeros(1, 5, dtype=torch.int32),
            torch.zeros(16, 32))
    error, lines = raised_by(source, lambda ns: ns["entry"].lower(*args), cls)
    assert lines[error.span.line - 1].strip() == statement and message in str(error)
