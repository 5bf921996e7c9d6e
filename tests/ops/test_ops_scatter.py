"""pl.tile.scatter (pto-isa's TSCATTER, index form) and pl.scatter / pl.tensor.scatter's index
form (upstream's element scatter of tensors, lowered row by row to it).  Both simulators
agree with torch's meaning and with the registry's torch semantics bit for bit on every
dtype TSCATTER takes; of two elements with one index the later (in row-major order of the
index tile, in order of k in a row) stays; only the index tile's valid region is written;
an index out of range is a KernelError; the tensor form is a write of its input (a reader
in the next block sees it in every schedule, dependency inference has the edge) and bad
calls, the mask form among them, are refused at their line saying why."""

from __future__ import annotations

import pytest
import torch
from located_errors import raised_by
from scatter_programs import C, K, R, row_scattered, scatter_in_tile, scatter_rows, scattered
from sim_and_torch import dtype_sweep, sim_and_torch

import pypto.language as pl
from pypto.ir import LoweringError, TypeCheckError
from pypto.runtime import KernelError, RunConfig

pytestmark = [pytest.mark.small_tiles,
              pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")]

# dtype -> the index dtype TSCATTER takes for its width
DTYPES = {"FP32": (torch.float32, torch.int32), "FP16": (torch.float16, torch.int16),
          "BF16": (torch.bfloat16, torch.uint16), "INT8": (torch.int8, torch.int16),
          "UINT8": (torch.uint8, torch.uint16), "INT16": (torch.int16, torch.int16),
          "UINT16": (torch.uint16, torch.int16), "INT32": (torch.int32, torch.uint32),
          "UINT32": (torch.uint32, torch.int32)}


def values(dtype: torch.dtype, shape, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        t = torch.randn(*shape, generator=g) * 100
        t.view(-1)[:4] = torch.tensor([-0.0, float("inf"), float("nan"), 1e-30])
        return t.to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max + 1, shape, generator=g,
                         dtype=torch.int64).to(dtype)


def same(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Equal bit for bit (a NaN matches the same NaN's bits)."""
    return got.dtype == want.dtype and torch.equal(got.view(torch.uint8), want.view(torch.uint8))


# -- pl.tile.scatter

def tile_arguments(dtype: torch.dtype, index_dtype: torch.dtype) -> list:
    at = torch.randint(0, R * C, (2, K), generator=torch.Generator().manual_seed(3))
    at[0, 3], at[1, 5] = 77, 77  # src[1, 5] stays
    at[:, 12:] = 5  # outside the valid region: element 5 keeps dst's value
    return [values(dtype, (R, C), 1), values(dtype, (2, K), 2), at.to(index_dtype),
            torch.zeros(R, C, dtype=dtype)]


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("dtype", dtype_sweep(DTYPES, ("FP32", "FP16", "INT8")))
def test_a_tile_scatter_writes_the_valid_indices_the_later_staying(dtype, platform):
    d, s, at, out = tile_arguments(*DTYPES[dtype])
    sim, host = sim_and_torch(scatter_in_tile, [d, s, at, out], platform)
    want = scattered(d, at[:, :12], s[:, :12])
    assert same(sim[3], want) and same(host[3], sim[3])
    assert same(sim[3].reshape(-1)[77:78], s[1, 5:6]) and same(sim[3][0, 5:6], d[0, 5:6])


def test_tile_scatter_agrees_with_its_torch_semantics():
    from pypto.debug.torch_runtime import tile_scatter

    d, s, at, _ = tile_arguments(torch.float32, torch.int32)
    assert same(tile_scatter(d, s, at, valid=[2, 12]), scattered(d, at[:, :12], s[:, :12]))


@pl.jit.incore
def scatter_into_src(s: pl.Tensor, i: pl.Tensor, out: pl.Out[pl.Tensor]):
    v = pl.load(s, [0, 0], [1, 8])
    v = pl.tile.scatter(pl.load(out, [0, 0], [1, 8]), v, pl.load(i, [0, 0], [1, 8]))
    out = pl.store(v, [0, 0], out)
    return out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_result_rebinding_src_reads_src_before_writing(platform):
    s, out = torch.arange(8, dtype=torch.float32).reshape(1, 8) + 10, torch.zeros(1, 8)
    at = torch.tensor([[7, 6, 5, 4, 3, 2, 1, 0]], dtype=torch.int32)
    sim, host = sim_and_torch(scatter_into_src, [s, at, out], platform)
    assert torch.equal(sim[2], s.flip(1)) and torch.equal(host[2], sim[2])


@pytest.mark.parametrize("bad", [R * C, -1])
def test_a_tile_scatter_index_outside_the_tile_is_a_kernel_error(bad):
    d, s, at, out = tile_arguments(torch.float32, torch.int32)
    at[1, 2] = bad
    with pytest.raises(KernelError, match=rf"tile.scatter: index {bad} lies outside"):
        scatter_in_tile(d, s, at, out)


@pytest.mark.parametrize(("statement", "message"), [
    ("t = pl.tile.scatter(pl.load(f, [0, 0], [4, 20]), v, i)", "rows of whole 32-byte blocks"),
    ("t = pl.tile.scatter(t, pl.load(h, [0, 0], [2, 16]), i)", "src must be a FP32 tile"),
    ("t = pl.tile.scatter(t, v, pl.load(j, [0, 0], [2, 16]))", "INT32 or UINT32 tile"),
    ("t = pl.tile.scatter(t, v, pl.load(g, [0, 0], [2, 8]))", "must have src's shape"),
    ("t = pl.tile.scatter(pl.load(h, [0, 0], [4, 32]), pl.load(h, [0, 0], [2, 16]), i)",
     "INT16 or UINT16 tile"),
])
def test_a_bad_tile_scatter_is_refused_at_its_line(statement, message):
    source = f'''
import pypto.language as pl

@pl.jit.incore
def entry(f: pl.Tensor[[4, 32], pl.FP32], h: pl.Tensor[[4, 32], pl.FP16],
          e: pl.Tensor[[2, 16], pl.INT32], j: pl.Tensor[[2, 16], pl.INT16],
          g: pl.Tensor[[2, 8], pl.INT32], out: pl.Out[pl.Tensor[[4, 32], pl.FP32]]):
    t = pl.load(f, [0, 0], [4, 32])
    v = pl.load(f, [0, 0], [2, 16])
    i = pl.load(e, [0, 0], [2, 16])
    {statement}
    out = pl.store(t, [0, 0], out)
    return out
'''
    args = (torch.zeros(4, 32), torch.zeros(4, 32, dtype=torch.float16),
            torch.zeros(2, 16, dtype=torch.int32), torch.zeros(2, 16, dtype=torch.int16),
            torch.zeros(2, 8, dtype=torch.int32), torch.zeros(4, 32))
    error, lines = raised_by(source, lambda ns: ns["entry"].lower(*args), TypeCheckError)
    assert lines[error.span.line - 1].strip() == statement and message in str(error)


# -- pl.scatter / pl.tensor.scatter (index form)

ROWS, S, KS = 8, 48, 6


def row_index(index_dtype: torch.dtype) -> torch.Tensor:
    index = torch.randint(0, S, (ROWS, KS), generator=torch.Generator().manual_seed(4))
    index[3, :3] = torch.tensor([9, 9, 9])  # src[3, 2] stays
    index[5, 0], index[5, 5] = 0, S - 1
    return index.to(index_dtype)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("dtype", dtype_sweep(DTYPES, ("FP32", "FP16", "INT8")))
def test_scatter_writes_each_src_element_at_its_column_the_later_staying(dtype, platform):
    dt, index_dtype = DTYPES[dtype]
    t, index, src = values(dt, (ROWS, S), 5), row_index(index_dtype), values(dt, (ROWS, KS), 6)
    sim, host = sim_and_torch(scatter_rows, [t, index, src], platform)
    assert same(sim[0], row_scattered(t, index, src)) and same(host[0], sim[0])
    assert same(sim[0][3, 9:10], src[3, 2:3])


def test_scatter_agrees_with_its_torch_semantics():
    from pypto.debug.torch_runtime import tensor_scatter

    t, index, src = values(torch.float32, (ROWS, S), 7), row_index(torch.int32), \
        values(torch.float32, (ROWS, KS), 8)
    assert same(tensor_scatter(t.clone(), -1, index, src), row_scattered(t, index, src))


@pl.jit
def scatter_spellings(a: pl.InOut[pl.Tensor], b: pl.InOut[pl.Tensor], c: pl.InOut[pl.Tensor],
                      index: pl.Tensor, src: pl.Tensor):
    with pl.at(level=pl.Level.CORE_GROUP):
        a = pl.tensor.scatter(a, -1, index, src)
        b = pl.scatter(b, dim=-1, index=index, src=src)
        pl.scatter(c, -1, index=index, src=src[0:8, :])  # a bare write rebinds c
    return a, b, c


def test_upstreams_spellings_of_scatter_bind_alike():
    t, index, src = torch.randn(ROWS, S), row_index(torch.int32), torch.randn(ROWS, KS)
    args = [t.clone(), t.clone(), t.clone(), index, src]
    scatter_spellings(*args)
    want = row_scattered(t, index, src)
    assert all(torch.equal(a, want) for a in args[:3])


@pl.jit
def scatter_then_read(t: pl.InOut[pl.Tensor], index: pl.Tensor, src: pl.Tensor,
                      out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(t, 1.0)  # before the scatter: the old elements
        t = pl.scatter(t, -1, index, src)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(out, t)  # after it: a reader ordered after the write
    return t, out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_reader_after_the_scatter_sees_its_elements_in_every_schedule(seed):
    t, index, src = torch.randn(ROWS, S), row_index(torch.int32), torch.randn(ROWS, KS)
    args = [t.clone(), index, src, torch.zeros(ROWS, S)]
    scatter_then_read(*args, config=RunConfig(schedule_seed=seed, detect_races=True))
    want = row_scattered(t, index, src)
    assert torch.equal(args[0], want) and torch.equal(args[3], (t + 1.0) + want)


def test_the_scatter_kernel_takes_its_input_in_and_out():
    program = scatter_rows.lower(torch.zeros(ROWS, S), row_index(torch.int32),
                                 torch.zeros(ROWS, KS))
    text = program.as_python()
    assert "t: pl.InOut[" in text and "pl.tile.scatter(" in text


def test_a_scatter_index_outside_the_row_is_a_kernel_error():
    index = row_index(torch.int32)
    index[6, 1] = S
    with pytest.raises(KernelError, match=rf"tile.scatter: index {S} lies outside"):
        scatter_rows(torch.zeros(ROWS, S), index, torch.zeros(ROWS, KS))


@pytest.mark.parametrize(("statement", "cls", "message"), [
    ("c = pl.scatter(c, -2, i, s)", TypeCheckError, "only dim=-1"),
    ("c = pl.scatter(c, -1, i16, s)", TypeCheckError, "INT32 or UINT32 tensor"),
    ("c = pl.scatter(c, -1, i, s16)", TypeCheckError, "src must be a FP32 tensor"),
    ("c = pl.scatter(c, -1, iw, w)", TypeCheckError, "K <= 48"),
    ("c = pl.scatter(c, -1, i)", TypeCheckError, "takes dim, index and src"),
    ("c = pl.scatter(c, mask_pattern=1, dst=c)", TypeCheckError,
     "zeroes every column the pattern does not select"),
    ("c = pl.tensor.scatter(c, -1, i, pl.add(s, 1.0))", LoweringError,
     "a value computed in the kernel"),
])
def test_a_bad_scatter_is_refused_at_its_line(statement, cls, message):
    source = f'''
import pypto.language as pl

@pl.jit
def entry(c: pl.InOut[pl.Tensor[[8, 48], pl.FP32]], i: pl.Tensor[[8, 6], pl.INT32],
          i16: pl.Tensor[[8, 6], pl.INT16], s: pl.Tensor[[8, 6], pl.FP32],
          s16: pl.Tensor[[8, 6], pl.FP16], w: pl.Tensor[[8, 64], pl.FP32],
          iw: pl.Tensor[[8, 64], pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        {statement}
    return c
'''
    args = (torch.zeros(8, 48), torch.zeros(8, 6, dtype=torch.int32),
            torch.zeros(8, 6, dtype=torch.int16), torch.zeros(8, 6),
            torch.zeros(8, 6, dtype=torch.float16), torch.zeros(8, 64),
            torch.zeros(8, 64, dtype=torch.int32))
    error, lines = raised_by(source, lambda ns: ns["entry"].lower(*args), cls)
    assert lines[error.span.line - 1].strip() == statement and message in str(error)
