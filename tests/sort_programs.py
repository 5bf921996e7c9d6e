"""Sorting kernels shared by the simulator tests (tests/ops/test_ops_sort.py) and the
CPU-model tests (tests/device/test_device_sort.py); tests/ is on sys.path through its
conftest.py.  The kernels take their shapes from their arguments."""

from __future__ import annotations

import torch

import pypto.language as pl
from pypto.debug import torch_runtime


@pl.jit.incore
def sort_rows(x: pl.Tensor, ids: pl.Tensor, out: pl.Out[pl.Tensor]):
    """pl.tile.sort32 of the whole of x, with ids."""
    s = pl.tile.sort32(pl.load(x, [0, 0], x.shape), pl.load(ids, [0, 0], ids.shape))
    out = pl.store(s, [0, 0], out)
    return out


@pl.jit.incore
def sort_valid_columns(x: pl.Tensor, ids: pl.Tensor, out: pl.Out[pl.Tensor]):
    """pl.sort32 of a [R, 64] tile valid over x's [R, 48] (a partial last block)."""
    t = pl.load(x, [0, 0], [x.shape[0], 64], valid_shape=[x.shape[0], 48])
    i = pl.load(ids, [0, 0], [x.shape[0], 64], valid_shape=[x.shape[0], 48])
    out = pl.store(pl.sort32(t, i), [0, 0], out)
    return out


@pl.jit.incore
def sort_whole_row(x: pl.Tensor, ids: pl.Tensor, out: pl.Out[pl.Tensor]):
    """A [1, 512] FP32 row sorted whole: sort32, then mrgsort's single-list form twice
    (runs of 32 pairs merged 4 at a time into runs of 128, then into one of 512)."""
    s = pl.tile.sort32(pl.load(x, [0, 0], [1, 512]), pl.load(ids, [0, 0], [1, 512]))
    m = pl.tile.mrgsort(s, block_len=64)
    out = pl.store(pl.tile.mrgsort(m, block_len=256), [0, 0], out)
    return out


@pl.jit.incore
def sort_fp16_row(x: pl.Tensor, ids: pl.Tensor, whole: pl.Out[pl.Tensor],
                  halves: pl.Out[pl.Tensor]):
    """A [1, 128] FP16 row sorted whole (runs of 32 pairs are 128 FP16 elements:
    block_len=128), and its two halves' runs merged by the list form."""
    s = pl.tile.sort32(pl.load(x, [0, 0], [1, 128]), pl.load(ids, [0, 0], [1, 128]))
    whole = pl.store(pl.tile.mrgsort(s, block_len=128), [0, 0], whole)
    halves = pl.store(pl.tile.mrgsort(s[0:1, 0:128], s[0:1, 128:256],
                                      tmp=pl.create_tile([1, 256], pl.FP16)), [0, 0], halves)
    return whole, halves


@pl.jit.incore
def split_in_kernel(x: pl.Tensor, ids: pl.Tensor, values: pl.Out[pl.Tensor],
                    carried: pl.Out[pl.Tensor]):
    """A [1, 32] FP32 row sorted and its pairs split in the kernel: the [1, 64] pairs
    reshaped to [32, 2], column 0 the values, column 1 the index bits seen as UINT32."""
    s = pl.tile.sort32(pl.load(x, [0, 0], [1, 32]), pl.load(ids, [0, 0], [1, 32]))
    p = pl.reshape(s, [32, 2])
    values = pl.store(p[0:32, 0:1], [0, 0], values)
    carried = pl.store(pl.reinterpret_view(p[0:32, 1:2], pl.UINT32), [0, 0], carried)
    return values, carried


@pl.jit.incore
def merge_lists(pairs: pl.Tensor, two: pl.Out[pl.Tensor], three: pl.Out[pl.Tensor],
                four: pl.Out[pl.Tensor]):
    """The four sorted runs of 32 FP32 pairs (64 elements each) of a [1, 256] row merged 2,
    3 and 4 at a time with mrgsort's list form."""
    a = pl.load(pairs, [0, 0], [1, 64])
    b = pl.load(pairs, [0, 64], [1, 64])
    c = pl.load(pairs, [0, 128], [1, 64])
    d = pl.load(pairs, [0, 192], [1, 64])
    two = pl.store(pl.tile.mrgsort(a, b, tmp=pl.create_tile([1, 128], pl.FP32)), [0, 0], two)
    three = pl.store(pl.tile.mrgsort(a, b, c, tmp=pl.create_tile([1, 192], pl.FP32)), [0, 0],
                     three)
    four = pl.store(pl.mrgsort(a, b, c, d, pl.create_tile([1, 256], pl.FP32)), [0, 0], four)
    return two, three, four


@pl.jit.incore
def merge_groups(pairs: pl.Tensor, out: pl.Out[pl.Tensor]):
    """mrgsort's single-list form on a [1, 256] FP32 row of 4 runs of 64 elements."""
    out = pl.store(pl.tile.mrgsort(pl.load(pairs, [0, 0], [1, 256]), block_len=64), [0, 0], out)
    return out


@pl.jit
def tensor_sorts(x: pl.Tensor, ids: pl.Tensor, pairs: pl.Out[pl.Tensor],
                 groups: pl.Out[pl.Tensor], merged: pl.Out[pl.Tensor]):
    """The tensor forms: pl.tensor.sort32 of [R, C] x, then pl.mrgsort of row 0's pairs
    (groups of 4 runs of 64 elements) and of its first two runs (no tmp: lowering makes
    it)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        pairs[:] = pl.tensor.sort32(x, ids)
    with pl.at(level=pl.Level.CORE_GROUP):
        groups[:] = pl.mrgsort(pairs[0:1, 0:256], block_len=64)
        merged[:] = pl.tensor.mrgsort(pairs[0:1, 0:64], pairs[0:1, 64:128])
    return pairs, groups, merged


def edge_values(dtype: torch.dtype, rows: int, cols: int, nan: bool = True) -> torch.Tensor:
    """[rows, cols] values with ties (within and across blocks), signed zeros, infinities
    and, with `nan`, two NaN in row 0."""
    g = torch.Generator().manual_seed(32)
    x = torch.randn(rows, cols, generator=g)
    x[:, 3:7] = 0.5
    x[:, 8], x[:, 9], x[:, 10] = -0.0, 0.0, -0.0
    x[:, 11], x[:, 12] = float("inf"), float("-inf")
    if cols > 40:
        x[:, 40] = 0.5
    if nan:
        x[0, 1], x[0, 20] = float("nan"), float("nan")
    return x.to(dtype)


def sorted_runs(values: torch.Tensor) -> torch.Tensor:
    """A [1, C] FP32 row's blocks of 32 as the sorted pair runs pl.sort32 makes ([1, 2C]),
    indices 0, 1, ... (the torch semantics: the input of the merges)."""
    return torch_runtime.sort32(values, indices(*values.shape))


def indices(rows: int, cols: int, start: int = 0) -> torch.Tensor:
    """UINT32 indices start, start + 1, ... in row-major order (from a start near 2**31 they
    cross into the top bit: the pairs carry all 32 bits)."""
    ids = torch.arange(rows * cols, dtype=torch.int64).reshape(rows, cols) + start
    return ids.to(torch.int32).view(torch.uint32)


def split_pairs(pairs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The values and the UINT32 indices of a sort's output (how a user splits them on the
    host): FP32 pairs are [value, index bits], FP16 ones [value, 0, index low, high]."""
    if pairs.dtype == torch.float32:
        flat = pairs.reshape(pairs.shape[0], -1, 2)
        return flat[..., 0], flat[..., 1].contiguous().view(torch.int32).view(torch.uint32)
    flat = pairs.reshape(pairs.shape[0], -1, 4)
    return flat[..., 0], flat[..., 2:].contiguous().view(torch.int32).view(torch.uint32)[..., 0]


def same_bits(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Bit for bit (NaN included)."""
    bits = torch.int16 if got.element_size() == 2 else torch.int32
    return torch.equal(got.view(bits), want.view(bits))
