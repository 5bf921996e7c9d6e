"""pl.tile.mgather / pl.tile.mscatter (pto-isa's MGATHER / MSCATTER) on both simulators:
torch's index_select / take / put semantics on in-range indices, pto-isa's CPU model's
policies for the rest (an index read as unsigned 64 bits; clamp, wrap, zero; undefined and a
scatter's out-of-range index refused at run time), the later of two scattered elements with
one index staying, every element type; the simulators agree with the registry's torch
semantics (torch_runtime) bit for bit; bad calls are refused at their line.  The task graph
sees a scatter as a write of its tensor: tests/deps/test_scatter_writes.py."""

from __future__ import annotations

import re

import pytest
import torch
from located_errors import raised_by
from sim_and_torch import sim_and_torch

import pypto.language as pl
from pypto.ir import LoweringError, TypeCheckError
from pypto.runtime import KernelError, RunConfig

pytestmark = [pytest.mark.small_tiles,
              pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")]

PLATFORMS = ["a2a3sim", "a5sim"]
ROWS, R, C = 16, 8, 32  # table rows; index / result tiles [R, C]
DTYPES = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16,
          "INT8": torch.int8, "UINT8": torch.uint8, "INT16": torch.int16,
          "INT32": torch.int32}


def unsigned(i: torch.Tensor) -> list[int]:
    """Indices as pto-isa's CPU model reads them: a negative INT32 is 2**64 + i."""
    return [v % 2 ** 64 for v in i.long().reshape(-1).tolist()]


def table_of(dtype: torch.dtype, rows: int = ROWS, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        t = torch.randn(rows, C, generator=g) * 100
        t.view(-1)[:5] = torch.tensor([-0.0, float("inf"), float("-inf"), float("nan"), 1e-30])
        return t.to(dtype)
    info = torch.iinfo(dtype)
    values = torch.randint(info.min, info.max + 1, (rows, C), generator=g, dtype=torch.int64)
    return values.to(dtype)


def same(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Equal bit for bit (a NaN matches the same NaN's bits)."""
    return got.dtype == want.dtype and torch.equal(got.view(torch.uint8), want.view(torch.uint8))


# Row indices past either end: 16 (the first out of range), -1 (2**64 - 1), INT32's extremes.
ROW_INDICES = torch.tensor([[3, 0, 15, 16, -1, 2**31 - 1, -2**31, 7]], dtype=torch.int32)


def expected_rows(table: torch.Tensor, ids: torch.Tensor, oob: str) -> torch.Tensor:
    rows = table.shape[0]
    out = torch.zeros(len(ids[0]), C, dtype=table.dtype)
    for r, k in enumerate(unsigned(ids)):
        if k < rows or oob != "zero":
            out[r] = table[k if k < rows else (rows - 1 if oob == "clamp" else k % rows)]
    return out


@pl.jit.incore
def gather_rows(table: pl.Tensor[[ROWS, C], pl.FP32], ids: pl.Tensor[[1, R], pl.INT32],
                clamp: pl.Out[pl.Tensor[[R, C], pl.FP32]], wrap: pl.Out[pl.Tensor[[R, C], pl.FP32]],
                zero: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    i = pl.load(ids, [0, 0], [1, R])
    clamp = pl.store(pl.tile.mgather(table, i, gather_oob="clamp"), [0, 0], clamp)
    wrap = pl.store(pl.tile.mgather(table, i, "row", gather_oob=2), [0, 0], wrap)
    zero = pl.store(pl.tile.mgather(table, i, coalesce=0, gather_oob="zero"), [0, 0], zero)
    return clamp, wrap, zero


@pytest.mark.parametrize("platform", PLATFORMS)
def test_row_gather_reads_the_indexed_rows_and_each_policy_past_the_end(platform):
    table = table_of(torch.float32)
    args = [table, ROW_INDICES] + [torch.full((R, C), 5.0) for _ in range(3)]
    sim, host = sim_and_torch(gather_rows, args, platform)
    for got, ref, oob in zip(sim[2:], host[2:], ("clamp", "wrap", "zero"), strict=True):
        assert same(got, expected_rows(table, ROW_INDICES, oob)), oob
        assert same(got, ref), oob
    in_range = [0, 1, 2, 7]
    assert same(sim[2][in_range], table.index_select(0, ROW_INDICES[0, in_range].long()))


@pl.jit.incore
def gather_elems(table: pl.Tensor, ids: pl.Tensor, wrap: pl.Out[pl.Tensor],
                 clamp: pl.Out[pl.Tensor], zero: pl.Out[pl.Tensor]):
    i = pl.load(ids, [0, 0], [R, C])
    wrap = pl.store(pl.tile.mgather(table, i, coalesce="elem", gather_oob="wrap"), [0, 0], wrap)
    clamp = pl.store(pl.tile.mgather(table, i, coalesce="elem", gather_oob="clamp"), [0, 0],
                     clamp)
    zero = pl.store(pl.tile.mgather(table, i, coalesce=1, gather_oob=3), [0, 0], zero)
    return wrap, clamp, zero


def elem_indices(dtype: torch.dtype = torch.int32) -> torch.Tensor:
    g = torch.Generator().manual_seed(5)
    if dtype == torch.uint32:
        ids = torch.randint(0, 2 * ROWS * C, (R, C), generator=g, dtype=torch.int64)
        ids.view(-1)[:3] = torch.tensor([2**32 - 1, ROWS * C, ROWS * C - 1])
        return ids.to(torch.uint32)
    ids = torch.randint(-ROWS * C, 2 * ROWS * C, (R, C), generator=g, dtype=torch.int32)
    ids.view(-1)[:6] = torch.tensor([0, ROWS * C - 1, ROWS * C, -1, 2**31 - 1, -2**31])
    return ids


def expected_elems(table: torch.Tensor, ids: torch.Tensor, oob: str) -> torch.Tensor:
    n = table.numel()
    picks = [k if k < n else {"wrap": k % n, "clamp": n - 1}.get(oob) for k in unsigned(ids)]
    flat = table.reshape(-1)
    zero = torch.zeros((), dtype=table.dtype)
    return torch.stack([flat[k] if k is not None else zero for k in picks]).reshape(ids.shape)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_elem_gather_is_take_with_each_policy_past_the_end_for_every_dtype(dtype):
    platform = "a5sim" if dtype in ("BF16", "INT16") else "a2a3sim"
    table, ids = table_of(DTYPES[dtype]), elem_indices()
    args = [table, ids] + [torch.ones(R, C, dtype=DTYPES[dtype]) for _ in range(3)]
    sim, host = sim_and_torch(gather_elems, args, platform)
    for got, ref, oob in zip(sim[2:], host[2:], ("wrap", "clamp", "zero"), strict=True):
        assert same(got, expected_elems(table, ids, oob)), oob
        assert same(got, ref), oob
    inside = (ids >= 0) & (ids < table.numel())
    assert same(sim[4][inside], torch.take(table, ids.long()[inside]))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_uint32_indices_are_read_unsigned(platform):
    table, ids = table_of(torch.float32), elem_indices(torch.uint32)
    args = [table, ids] + [torch.ones(R, C) for _ in range(3)]
    sim, host = sim_and_torch(gather_elems, args, platform)
    for got, ref, oob in zip(sim[2:], host[2:], ("wrap", "clamp", "zero"), strict=True):
        assert same(got, expected_elems(table, ids, oob)) and same(got, ref), oob


@pl.jit.incore
def gather_partial(table: pl.Tensor[[ROWS, C], pl.FP32], ids: pl.Tensor[[R, C], pl.INT32],
                   out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    i = pl.load(ids, [0, 0], [R, C], valid_shape=[R, 5], pad_value=pl.PadValue.max)
    g = pl.tile.mgather(table, i, coalesce="elem", gather_oob="clamp")
    out = pl.store(pl.set_validshape(g, R, C), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_partial_index_tile_gathers_its_valid_region_and_pads_with_zero(platform):
    table, ids = table_of(torch.float32), elem_indices()
    sim, host = sim_and_torch(gather_partial, [table, ids, torch.ones(R, C)], platform)
    want = torch.zeros(R, C)
    want[:, :5] = expected_elems(table, ids[:, :5], "clamp")
    assert same(sim[2], want) and same(host[2], want)


@pl.jit.incore
def gather_part(table: pl.Tensor[[ROWS, C], pl.FP32], rows: pl.Tensor[[1, R], pl.INT32],
                ids: pl.Tensor[[R, C], pl.INT32], by_row: pl.Out[pl.Tensor[[R, C], pl.FP32]],
                by_elem: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    g = pl.tile.mgather(table, pl.load(rows, [0, 0], [1, R]), valid_shape=[5, 24],
                        gather_oob="wrap")
    by_row = pl.store(pl.set_validshape(g, R, C), [0, 0], by_row)
    e = pl.tile.mgather(table, pl.load(ids, [0, 0], [R, C]), "elem", valid_shape=[3, 7],
                        gather_oob="clamp")
    by_elem = pl.store(pl.set_validshape(e, R, C), [0, 0], by_elem)
    return by_row, by_elem


@pytest.mark.parametrize("platform", PLATFORMS)
def test_valid_shape_gathers_that_part_alone(platform):
    table, ids = table_of(torch.float32), elem_indices()
    args = [table, ROW_INDICES, ids, torch.ones(R, C), torch.ones(R, C)]
    sim, host = sim_and_torch(gather_part, args, platform)
    by_row, by_elem = torch.zeros(R, C), torch.zeros(R, C)
    by_row[:5, :24] = expected_rows(table, ROW_INDICES, "wrap")[:5, :24]
    by_elem[:3, :7] = expected_elems(table, ids, "clamp")[:3, :7]
    assert same(sim[3], by_row) and same(host[3], by_row)
    assert same(sim[4], by_elem) and same(host[4], by_elem)


@pl.jit.incore
def gather_undefined(table: pl.Tensor[[ROWS, C], pl.FP32], ids: pl.Tensor[[1, R], pl.INT32],
                     out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    out = pl.store(pl.tile.mgather(table, pl.load(ids, [0, 0], [1, R])), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_index_past_the_end_under_the_undefined_policy_is_a_kernel_error(platform):
    table = table_of(torch.float32)
    ok = torch.tensor([[0, 1, 2, 3, 4, 5, 6, 15]], dtype=torch.int32)
    out = torch.zeros(R, C)
    gather_undefined(table, ok, out, config=RunConfig(platform=platform))
    assert same(out, table[ok[0].long()])
    with pytest.raises(KernelError, match=r"mgather \(row\): index 16 lies outside \[0, 16\)"):
        gather_undefined(table, ok + 1, out, config=RunConfig(platform=platform))


@pl.jit.incore
def scatter(src: pl.Tensor, ids: pl.Tensor, out: pl.InOut[pl.Tensor]):
    pl.tile.mscatter(pl.load(src, [0, 0], [R, C]), pl.load(ids, [0, 0], [R, C]), out)
    return out


def scatter_indices() -> torch.Tensor:
    g = torch.Generator().manual_seed(9)
    ids = torch.randint(0, ROWS * C, (R, C), generator=g, dtype=torch.int32)
    ids.view(-1)[:6] = torch.tensor([7, 7, 0, ROWS * C - 1, 7, 0])  # duplicates
    return ids


def expected_scatter(table: torch.Tensor, src: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    want = table.clone()
    for k, v in zip(ids.reshape(-1).tolist(), src.reshape(-1), strict=True):
        want.view(-1)[k] = v  # row-major order: the later of two with one index stays
    return want


@pytest.mark.parametrize("dtype", ["FP32", "BF16", "INT8", "INT32"])
def test_scatter_writes_in_row_major_order_so_the_last_duplicate_stays(dtype):
    platform = "a5sim" if dtype in ("BF16", "INT8") else "a2a3sim"
    table, ids = table_of(DTYPES[dtype]), scatter_indices()
    src = table_of(DTYPES[dtype], R, seed=1)
    sim, host = sim_and_torch(scatter, [src, ids, table], platform)
    want = expected_scatter(table, src, ids)
    assert same(sim[2], want) and same(host[2], want)
    assert same(sim[2].view(-1)[7:8], src.view(-1)[4:5])
    unique = table.clone()
    unique.view(-1).index_put_((ids.view(-1)[6:].long(),), src.view(-1)[6:])
    untouched = ~torch.isin(torch.arange(ROWS * C), ids.view(-1)[:6].long())
    assert same(sim[2].view(-1)[untouched], unique.view(-1)[untouched])


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_scatter_index_past_the_end_is_a_kernel_error(platform):
    ids = scatter_indices()
    ids[3, 4] = -1
    with pytest.raises(KernelError, match=r"mscatter: index -1 lies outside \[0, 512\)"):
        scatter(torch.ones(R, C), ids, torch.zeros(ROWS, C), config=RunConfig(platform=platform))


# -- refusals at the user's line

# name -> (the statement, refused at its line, and what the error says)
REFUSED = {
    "float indices": ("g = pl.tile.mgather(t, pl.load(f, [0, 0], [1, 8]))",
                      "idx must be an INT32 or UINT32 tile"),
    "row indices in rows": ("g = pl.tile.mgather(t, pl.load(i, [0, 0], [2, 8]))",
                            r"coalesce='row'\) reads one row index per result row"),
    "unknown policy": ("g = pl.tile.mgather(t, pl.load(i, [0, 0], [1, 8]), gather_oob='skip')",
                       "gather_oob='skip' is not one of"),
    "unknown coalesce": ("g = pl.tile.mgather(t, pl.load(i, [0, 0], [1, 8]), coalesce=2)",
                         "coalesce=2 is not one of"),
    "Mat destination": ("g = pl.tile.mgather(t, pl.load(i, [0, 0], [1, 8]), "
                        "target_memory=pl.Mem.Mat)", "gathers into Vec only"),
    "valid_shape": ("g = pl.tile.mgather(t, pl.load(i, [0, 0], [1, 8]), valid_shape=[9, 32])",
                    r"valid_shape=\[9, 32\] must be two constants within the \[8, 32\]"),
    "scatter dtype": ("pl.tile.mscatter(pl.load(h, [0, 0], [8, 32]), pl.load(w, [0, 0], [8, 32]), "
                      "out)", "a FP16 tile scattered into a FP32"),
    "scatter shapes": ("pl.tile.mscatter(pl.load(t, [0, 0], [8, 32]), pl.load(w, [0, 0], [8, 16]), "
                       "out)", "must have src's shape"),
    "gather float indices": ("g = pl.tile.gather(s, pl.load(f, [0, 0], [1, 8]), "
                             "pl.create_tile([1, 8], pl.INT32))", "indices must be an INT32 tile"),
    "gather tmp": ("g = pl.tile.gather(s, pl.load(i, [0, 0], [1, 8]), "
                   "pl.create_tile([2, 8], pl.INT32))", "tmp must be an INT32 tile"),
    "gather unaligned rows": ("g = pl.tile.gather(pl.load(t, [0, 0], [4, 4]), pl.load(i, [0, 0], "
                              "[1, 8]), pl.create_tile([1, 8], pl.INT32))",
                              "rows of whole 32-byte blocks"),
    "gatherb offsets": ("g = pl.tile.gatherb(s, pl.load(i, [0, 0], [1, 8]))",
                        "offsets must be a UINT32 tile"),
}
KERNEL = """
import pypto.language as pl

@pl.jit.incore
def k(t: pl.Tensor[[16, 32], pl.FP32], i: pl.Tensor[[2, 8], pl.INT32],
      f: pl.Tensor[[1, 8], pl.FP32], h: pl.Tensor[[8, 32], pl.FP16],
      w: pl.Tensor[[8, 32], pl.INT32], out: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]):
    s = pl.load(t, [0, 0], [16, 32])
    {statement}
    return out
"""
ARGS = (torch.zeros(16, 32), torch.zeros(2, 8, dtype=torch.int32), torch.zeros(1, 8),
        torch.zeros(8, 32, dtype=torch.float16), torch.zeros(8, 32, dtype=torch.int32),
        torch.zeros(16, 32))


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_bad_call_is_refused_at_its_line(case):
    statement, message = REFUSED[case]
    error, lines = raised_by(KERNEL.format(statement=statement),
                             lambda ns: ns["k"].frontend(*ARGS), TypeCheckError)
    assert lines[error.span.line - 1].strip() == statement
    assert re.search(message, str(error)), str(error)


def test_a_gather_from_a_view_is_refused_at_its_line():
    statement = "g = pl.tile.mgather(t[8:16, :], pl.load(i, [0, 0], [1, 8]), gather_oob='clamp')"
    source = KERNEL.format(statement=statement + "\n    out = pl.store(g, [0, 0], out)")
    error, lines = raised_by(source, lambda ns: ns["k"].lower(*ARGS), LoweringError)
    assert lines[error.span.line - 1].strip() == statement and "is a view" in str(error)


# -- gathers within a tile: pl.tile.gather (TGATHER, index form), pl.tile.gatherb (TGATHERB)


@pl.jit.incore
def within(src: pl.Tensor, ids: pl.Tensor, offsets: pl.Tensor, g: pl.Out[pl.Tensor],
           b: pl.Out[pl.Tensor]):
    s = pl.load(src, [0, 0], [R, C])
    i = pl.load(ids, [0, 0], [R, 16])
    g = pl.store(pl.tile.gather(s, i, pl.create_tile([R, 16], pl.INT32)), [0, 0], g)
    b = pl.store(pl.tile.gatherb(s, pl.load(offsets, [0, 0], [4, 8])), [0, 0], b)
    return g, b


def within_arguments(dtype: torch.dtype) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(4)
    ids = torch.randint(-40, R * C + 40, (R, 16), generator=g, dtype=torch.int32)
    ids.view(-1)[:5] = torch.tensor([-1, 0, R * C - 1, R * C, -2**31])
    nbytes = R * C * dtype.itemsize
    offsets = torch.randint(0, nbytes - 31, (4, 8), generator=g, dtype=torch.int64)
    offsets.view(-1)[:3] = torch.tensor([0, 1, nbytes - 32])  # unaligned; the last block
    per = 32 // dtype.itemsize
    return [table_of(dtype, R), ids, offsets.to(torch.uint32), torch.ones(R, 16, dtype=dtype),
            torch.ones(4, 8 * per, dtype=dtype)]


@pytest.mark.parametrize("dtype", ["FP32", "FP16", "INT16", "INT32"])
def test_tile_gather_is_take_with_zero_outside_and_gatherb_copies_32_byte_blocks(dtype):
    platform = "a5sim" if dtype in ("FP16", "INT32") else "a2a3sim"
    args = within_arguments(DTYPES[dtype])
    sim, host = sim_and_torch(within, args, platform)
    src, ids, offsets = args[:3]
    inside = (ids >= 0) & (ids < src.numel())
    want = torch.where(inside, torch.take(src, ids.long().clamp(0, src.numel() - 1)),
                       torch.zeros((), dtype=src.dtype))
    assert same(sim[3], want) and same(host[3], want)
    storage = src.view(torch.uint8).reshape(-1)
    blocks = torch.stack([torch.cat([storage[o:o + 32] for o in row])
                          for row in offsets.long().tolist()])
    assert same(sim[4], blocks.view(src.dtype)) and same(host[4], blocks.view(src.dtype))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_gatherb_block_past_the_tile_is_a_kernel_error(platform):
    args = within_arguments(torch.float32)
    args[2][1, 3] = R * C * 4 - 28
    with pytest.raises(KernelError, match="gatherb: a block at byte 996 reaches past the tile's "
                                          "1024 bytes"):
        within(*args, config=RunConfig(platform=platform))


# -- pl.tensor.gather (the flat form, in a pl.at block): lowered to pl.tile.mgather


@pl.jit
def tensor_gather(table: pl.Tensor, ids: pl.Tensor, out: pl.Out[pl.Tensor],
                  shifted: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.tensor.gather(table, ids)
        shifted[:] = pl.add(pl.tensor.gather(table, index=pl.add(ids, 1)), table[0:16, :])
    return out, shifted


@pytest.mark.parametrize(("dtype", "platform"), [("FP32", "a2a3sim"), ("FP16", "a5sim"),
                                                 ("INT32", "a5sim"), ("INT16", "a2a3sim")])
def test_tensor_gather_is_the_flattened_input_at_the_indices(dtype, platform):
    table = table_of(DTYPES[dtype], 64)
    ids = torch.randint(0, table.numel() - 1, (16, C), generator=torch.Generator().manual_seed(3),
                        dtype=torch.int32)
    ids.view(-1)[:3] = torch.tensor([0, 0, table.numel() - 2])
    args = [table, ids, torch.ones(16, C, dtype=table.dtype), torch.ones(16, C, dtype=table.dtype)]
    sim, host = sim_and_torch(tensor_gather, args, platform)
    flat = table.reshape(-1)
    assert same(sim[2], flat[ids.long()]) and same(host[2], sim[2])
    assert same(host[3], sim[3])


def test_a_tensor_gather_index_outside_the_input_is_a_kernel_error():
    table, ids = torch.randn(64, C), torch.zeros(16, C, dtype=torch.int32)
    ids[5, 6] = 64 * C
    with pytest.raises(KernelError, match=r"index 2048 lies outside \[0, 2048\)"):
        tensor_gather(table, ids, torch.zeros(16, C), torch.zeros(16, C))


@pytest.mark.parametrize(("statement", "cls", "message"), [
    ("out[:] = pl.tensor.gather(x, 1, i)", TypeCheckError, "axis form"),
    ("out[:] = pl.tensor.gather(x, mask_pattern=1)", TypeCheckError, "mask and compare forms"),
    ("out[:] = pl.tensor.gather(pl.add(x, 1.0), i)", LoweringError,
     "a value computed in the kernel"),
])
def test_a_tensor_gather_form_not_modelled_is_refused_at_its_line(statement, cls, message):
    source = f'''
import pypto.language as pl

@pl.jit
def entry(x: pl.Tensor[[16, 32], pl.FP32], i: pl.Tensor[[16, 32], pl.INT32],
          out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        {statement}
    return out
'''
    args = (torch.zeros(16, 32), torch.zeros(16, 32, dtype=torch.int32), torch.zeros(16, 32))
    error, lines = raised_by(source, lambda ns: ns["entry"].lower(*args), cls)
    assert lines[error.span.line - 1].strip() == statement and message in str(error)
