"""Upstream's tensor-level scatters in pl.at blocks: pl.scatter_update (pl.tensor.scatter_update)
writes row index.flatten()[k] of its input from row k of src, lowered to pl.tile.mscatter's
row form (MSCATTER<Coalesce::Row>) with the chunk's indices gathered by pl.tile.mgather.
Both simulators agree with torch (index_copy_ in order of k) and with the registry's torch
semantics bit for bit, on every dtype the scatter takes; of two rows with one index the
later stays; upstream's three call spellings bind alike; an index out of range is a
KernelError and bad calls are refused at their line.  The scatter is a write of its input:
dependency inference orders a later reader after it.  pl.tile.mscatter(coalesce='row') is
checked here too (tests/ops/test_ops_gather.py has the element form).  pl.scatter's index
form and pl.tile.scatter (TSCATTER) are in tests/ops/test_ops_scatter.py."""

from __future__ import annotations

import pytest
import torch
from located_errors import raised_by
from sim_and_torch import dtype_sweep, sim_and_torch

import pypto.language as pl
from pypto.ir import CapacityError, LoweringError, TypeCheckError
from pypto.runtime import KernelError, RunConfig

pytestmark = [pytest.mark.small_tiles,
              pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")]

ROWS, D = 64, 32
DTYPES = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16,
          "INT8": torch.int8, "UINT8": torch.uint8, "INT16": torch.int16, "INT32": torch.int32}


def values(dtype: torch.dtype, rows: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        t = torch.randn(rows, D, generator=g) * 100
        t.view(-1)[:4] = torch.tensor([-0.0, float("inf"), float("nan"), 1e-30])
        return t.to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max + 1, (rows, D), generator=g,
                         dtype=torch.int64).to(dtype)


def same(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Equal bit for bit (a NaN matches the same NaN's bits)."""
    return got.dtype == want.dtype and torch.equal(got.view(torch.uint8), want.view(torch.uint8))


def updated(cache: torch.Tensor, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    """torch's meaning: rows copied in order of k, so the later of two with one index stays."""
    want = cache.clone()
    for k, i in enumerate(index.reshape(-1).tolist()):
        want[i] = src[k]
    return want


# Index [2, 4]: 7 twice (row 2 then row 5 of src: row 5 stays), the first and last rows.
INDEX = torch.tensor([[3, 0, 7, 63], [12, 7, 40, 1]], dtype=torch.int32)


@pl.jit
def update(cache: pl.InOut[pl.Tensor], index: pl.Tensor, src: pl.Tensor):
    with pl.at(level=pl.Level.CORE_GROUP):
        cache = pl.scatter_update(cache, -2, index, src)
    return cache


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("dtype", dtype_sweep(DTYPES))
def test_scatter_update_writes_each_src_row_at_its_index_the_later_staying(dtype, platform):
    cache, src = values(DTYPES[dtype], ROWS, 1), values(DTYPES[dtype], 8, 2)
    sim, host = sim_and_torch(update, [cache, INDEX, src], platform)
    assert same(sim[0], updated(cache, INDEX, src)) and same(host[0], sim[0])
    assert same(sim[0][7], src[5])  # the duplicate index: the later row


def test_scatter_update_agrees_with_its_torch_semantics():
    from pypto.debug.torch_runtime import scatter_update

    cache, src = values(torch.float32, ROWS, 3), values(torch.float32, 8, 4)
    got = scatter_update(cache.clone(), INDEX, src)
    assert same(got, updated(cache, INDEX, src))


@pl.jit
def update_spellings(a: pl.InOut[pl.Tensor], b: pl.InOut[pl.Tensor], c: pl.InOut[pl.Tensor],
                     index: pl.Tensor, src: pl.Tensor):
    with pl.at(level=pl.Level.CORE_GROUP):
        a = pl.tensor.scatter_update(a, -2, index, src)
        b = pl.scatter_update(b, index, src, dim=-2)
        pl.scatter_update(c, -2, index=index, src=src)  # a bare write rebinds c
    return a, b, c


def test_upstreams_three_spellings_of_scatter_update_bind_alike():
    cache, src = values(torch.float32, ROWS, 5), values(torch.float32, 8, 6)
    args = [cache.clone(), cache.clone(), cache.clone(), INDEX, src]
    update_spellings(*args)
    want = updated(cache, INDEX, src)
    assert all(same(t, want) for t in args[:3])


@pl.jit
def update_then_read(cache: pl.InOut[pl.Tensor], index: pl.Tensor, src: pl.Tensor,
                     out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(cache, 1.0)  # before the scatter: the old rows
        cache = pl.scatter_update(cache, -2, index, src)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(out, cache)  # after it: a reader ordered after the write
    return cache, out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_reader_after_the_scatter_sees_its_rows_in_every_schedule(seed):
    cache, src = torch.randn(ROWS, D), torch.randn(8, D)
    args = [cache.clone(), INDEX, src, torch.zeros(ROWS, D)]
    update_then_read(*args, config=RunConfig(schedule_seed=seed, detect_races=True))
    want = updated(cache, INDEX, src)
    assert torch.equal(args[0], want) and torch.equal(args[3], (cache + 1.0) + want)


@pl.jit
def update_from_a_slice(cache: pl.InOut[pl.Tensor], index: pl.Tensor, src: pl.Tensor):
    with pl.at(level=pl.Level.CORE_GROUP):
        cache = pl.scatter_update(cache, -2, index, src[8:16, :])
    return cache


def test_src_may_be_a_slice_of_a_tensor_the_block_is_given():
    cache, src = torch.randn(ROWS, D), torch.randn(16, D)
    args = [cache.clone(), INDEX, src]
    update_from_a_slice(*args)
    assert torch.equal(args[0], updated(cache, INDEX, src[8:16]))


# -- upstream's rank-4 form: the KV cache [blockNum, blockSize, 1, d], src [b, s, 1, d]
BLOCKS, BLOCK = 8, 8  # the cache's ROWS = 64 rows


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("dtype", ["FP32", "BF16", "INT8"])
def test_the_rank4_form_writes_the_same_rows_of_the_flattened_cache(dtype, platform):
    cache = values(DTYPES[dtype], ROWS, 11).reshape(BLOCKS, BLOCK, 1, D)
    src = values(DTYPES[dtype], 8, 12).reshape(2, 4, 1, D)
    sim, host = sim_and_torch(update, [cache, INDEX, src], platform)
    want = updated(cache.reshape(ROWS, D), INDEX, src.reshape(8, D)).reshape(cache.shape)
    assert sim[0].shape == cache.shape and same(sim[0], want) and same(host[0], sim[0])
    assert same(sim[0][0, 7, 0], src[1, 1, 0])  # row 7 (block 0, slot 7): the later of two


def test_the_rank4_form_is_written_in_chunks_when_src_outgrows_the_vec_buffer():
    g = torch.Generator().manual_seed(13)
    index = torch.randperm(BIG_ROWS, generator=g)[:192].to(torch.int32).reshape(12, 16)
    cache = torch.randn(16, 16, 1, BIG_D, generator=g)
    src = torch.randn(12, 16, 1, BIG_D, generator=g)
    assert "pl.range" in big_update.lower(cache, index, src).as_python()
    args = [cache.clone(), index, src]
    big_update(*args)
    want = updated(cache.reshape(BIG_ROWS, BIG_D), index, src.reshape(192, BIG_D))
    assert torch.equal(args[0], want.reshape(cache.shape))


def test_a_rank4_index_outside_the_cache_is_a_kernel_error():
    index = INDEX.clone()
    index[0, 1] = ROWS
    with pytest.raises(KernelError, match=rf"index {ROWS} lies outside \[0, {ROWS}\)"):
        update(torch.zeros(BLOCKS, BLOCK, 1, D), index, torch.zeros(2, 4, 1, D))


@pl.jit
def update_blocks_of_a_view(cache: pl.InOut[pl.Tensor], index: pl.Tensor, src: pl.Tensor):
    part = cache[:, 0:4, :, :]  # half of each block: its rows are not one run
    with pl.at(level=pl.Level.CORE_GROUP):
        part = pl.scatter_update(part, -2, index, src)
    return cache


def test_a_rank4_cache_whose_rows_are_not_adjacent_is_a_kernel_error():
    with pytest.raises(KernelError, match=r"mscatter \(row\): the tensor's rows are not "
                                          r"adjacent"):
        update_blocks_of_a_view(torch.zeros(BLOCKS, BLOCK, 1, D), INDEX[:, :2].contiguous(),
                                torch.zeros(2, 2, 1, D))


BIG_ROWS, BIG_D = 256, 256


@pl.jit
def big_update(cache: pl.InOut[pl.Tensor], index: pl.Tensor, src: pl.Tensor):
    with pl.at(level=pl.Level.CORE_GROUP):
        cache = pl.scatter_update(cache, -2, index, src)
    return cache


def test_a_scatter_larger_than_the_vec_buffer_is_written_in_chunks_of_rows():
    g = torch.Generator().manual_seed(7)
    index = torch.randperm(BIG_ROWS, generator=g)[:192].to(torch.int32).reshape(12, 16)
    cache, src = torch.randn(BIG_ROWS, BIG_D, generator=g), torch.randn(192, BIG_D, generator=g)
    program = big_update.lower(cache, index, src)
    assert "pl.range" in program.as_python()  # more than one chunk (small_tiles' Vec)
    args = [cache.clone(), index, src]
    big_update(*args)
    assert torch.equal(args[0], updated(cache, index, src))


def test_a_scatter_update_index_outside_the_input_is_a_kernel_error():
    index = INDEX.clone()
    index[1, 2] = ROWS
    with pytest.raises(KernelError, match=rf"index {ROWS} lies outside \[0, {ROWS}\)"):
        update(torch.zeros(ROWS, D), index, torch.zeros(8, D))


@pytest.mark.parametrize(("statement", "cls", "message"), [
    ("c = pl.scatter_update(c, -1, i, s)", TypeCheckError, "only dim=-2"),
    ("c = pl.scatter_update(c, -2, i16, s)", TypeCheckError, "INT32 or UINT32"),
    ("c = pl.scatter_update(c, -2, i, s16)", TypeCheckError, "src must be a FP32 tensor"),
    ("c = pl.scatter_update(c, -2, i, c)", TypeCheckError, "src must be [b * s, d] = [8, 32]"),
    ("c4 = pl.scatter_update(c4, -2, i, s)", TypeCheckError,
     "src must be [b, s, 1, d] = [2, 4, 1, 32]"),
    ("c = pl.scatter_update(c, -2, i, s4)", TypeCheckError, "src must be [b * s, d]"),
    ("c2 = pl.scatter_update(c2, -2, i, s4)", TypeCheckError,
     "input must be [rows, d] or upstream's KV cache [blockNum, blockSize, 1, d]"),
    ("c = pl.scatter_update(c, -2, i, pl.add(s, 1.0))", LoweringError,
     "a value computed in the kernel"),
])
def test_a_bad_scatter_update_is_refused_at_its_line(statement, cls, message):
    source = f'''
import pypto.language as pl

@pl.jit
def entry(c: pl.InOut[pl.Tensor[[64, 32], pl.FP32]], i: pl.Tensor[[2, 4], pl.INT32],
          i16: pl.Tensor[[2, 4], pl.INT16], s: pl.Tensor[[8, 32], pl.FP32],
          s16: pl.Tensor[[8, 32], pl.FP16], c4: pl.InOut[pl.Tensor[[8, 8, 1, 32], pl.FP32]],
          s4: pl.Tensor[[2, 4, 1, 32], pl.FP32],
          c2: pl.InOut[pl.Tensor[[8, 4, 2, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        {statement}
    return c
'''
    args = (torch.zeros(64, 32), torch.zeros(2, 4, dtype=torch.int32),
            torch.zeros(2, 4, dtype=torch.int16), torch.zeros(8, 32),
            torch.zeros(8, 32, dtype=torch.float16), torch.zeros(8, 8, 1, 32),
            torch.zeros(2, 4, 1, 32), torch.zeros(8, 4, 2, 32))
    error, lines = raised_by(source, lambda ns: ns["entry"].lower(*args), cls)
    assert lines[error.span.line - 1].strip() == statement and message in str(error)


@pytest.mark.parametrize(("statement", "index_shape", "src_shape"), [
    ("c = pl.scatter_update(c, -2, i, s)", (1, 2), (2, 131072)),
    ("c = pl.scatter(c, -1, i, s)", (2, 4), (2, 4)),  # tests/ops/test_ops_scatter.py's op
])
def test_a_row_too_long_for_the_vec_buffer_is_a_capacity_error_at_the_line(statement,
                                                                           index_shape,
                                                                           src_shape):
    source = f'''
import pypto.language as pl

@pl.jit
def entry(c: pl.InOut[pl.Tensor[[2, 131072], pl.FP32]], i: pl.Tensor[{list(index_shape)}, pl.INT32],
          s: pl.Tensor[{list(src_shape)}, pl.FP32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        {statement}
    return c
'''
    args = (torch.zeros(2, 131072), torch.zeros(*index_shape, dtype=torch.int32),
            torch.zeros(*src_shape))
    error, lines = raised_by(source, lambda ns: ns["entry"].lower(*args), CapacityError)
    assert lines[error.span.line - 1].strip() == statement and "Vec" in str(error)


# -- pl.tile.mscatter(coalesce='row'): MSCATTER's row form, which scatter_update lowers to


@pl.jit.incore
def row_scatter(src: pl.Tensor[[8, D], pl.FP32], ids: pl.Tensor[[1, 8], pl.INT32],
                table: pl.InOut[pl.Tensor[[ROWS, D], pl.FP32]]):
    values = pl.load(src, [0, 0], [8, D], valid_shape=[6, D])  # rows 6, 7 not written
    table = pl.tile.mscatter(values, pl.load(ids, [0, 0], [1, 8]), table, coalesce="row")
    return table


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_row_mscatter_writes_the_valid_rows_at_their_indices(platform):
    ids = torch.tensor([[5, 9, 5, 63, 0, 1, 2, 3]], dtype=torch.int32)
    table, src = torch.randn(ROWS, D), torch.randn(8, D)
    sim, host = sim_and_torch(row_scatter, [src, ids, table], platform)
    want = updated(table, ids[:, :6], src[:6])
    assert same(sim[2], want) and same(host[2], sim[2])


@pytest.mark.parametrize(("statement", "message"), [
    ("t = pl.tile.mscatter(v, pl.load(e, [0, 0], [8, 32]), t, coalesce='row')",
     "must be a [1, R] tile"),
    ("t = pl.tile.mscatter(v, r, t, coalesce='rows')", "coalesce='rows' is not one of"),
])
def test_a_bad_row_mscatter_is_refused_at_its_line(statement, message):
    source = f'''
import pypto.language as pl

@pl.jit.incore
def entry(s: pl.Tensor[[8, 32], pl.FP32], e: pl.Tensor[[8, 32], pl.INT32],
          i: pl.Tensor[[1, 8], pl.INT32], t: pl.InOut[pl.Tensor[[64, 32], pl.FP32]]):
    v = pl.load(s, [0, 0], [8, 32])
    r = pl.load(i, [0, 0], [1, 8])
    {statement}
    return t
'''
    args = (torch.zeros(8, 32), torch.zeros(8, 32, dtype=torch.int32),
            torch.zeros(1, 8, dtype=torch.int32), torch.zeros(64, 32))
    error, lines = raised_by(source, lambda ns: ns["entry"].lower(*args), TypeCheckError)
    assert lines[error.span.line - 1].strip() == statement and message in str(error)


# -- upstream's L1 gathers: refused at their line, saying why


@pytest.mark.parametrize(("statement", "why"), [
    ("kv = pl.create_l1([16, 32], pl.FP32)", "does not exist here"),
    ("kv = pl.tensor.create_l1([16, 32], pl.FP32)", "does not exist here"),
    ("kv = pl.gather_row(c, c, [0, 0], [1, 0], [1, 32])", "pl.create_l1"),
    ("kv = pl.tensor.gather_row(c, c, [0, 0], [1, 0], [1, 32])", "pl.create_l1"),
])
def test_upstreams_l1_gathers_are_refused_at_their_line_saying_why(statement, why):
    source = f'''
import pypto.language as pl

@pl.jit
def entry(c: pl.InOut[pl.Tensor[[64, 32], pl.FP32]], i: pl.Tensor[[2, 4], pl.INT32],
          s: pl.Tensor[[8, 32], pl.FP32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        {statement}
    return c
'''
    args = (torch.zeros(64, 32), torch.zeros(2, 4, dtype=torch.int32), torch.zeros(8, 32))
    error, lines = raised_by(source, lambda ns: ns["entry"].lower(*args), TypeCheckError)
    assert lines[error.span.line - 1].strip() == statement
    assert "is not supported here" in str(error) and why in str(error)
