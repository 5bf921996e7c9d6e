"""A slice whose runtime window reaches past its tensor's end (upstream's meaning).

Upstream PyPTO: "the slice is never valid where the source is not: the source's valid
region, shifted by offset and cut to the window, bounds the result"; a window provably
outside is rejected when the program is built.  Here the orchestration cuts such a view
back to the tensor's edge at run time, and the simulators refuse every kernel access
beyond it (a KernelError naming the kernel), so what lies past the end is never read.
"""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.ir import TypeCheckError
from pypto.runtime import KernelError, OrchestrationError


@pl.jit.incore
def copy_rows(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]]):
    out = pl.store(pl.load(x, [0, 0], [8, 128]), [0, 0], out)
    return out


@pl.jit
def tail_rows(x: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]],
              row: pl.Scalar[pl.INT64]):
    window = pl.slice(x, [16, 128], [row, 0])  # rows row..row+15 of 32
    out = copy_rows(window, out)
    return out


def test_a_window_past_the_end_is_cut_back_and_its_valid_part_is_read():
    x, out = torch.randn(32, 128), torch.zeros(8, 128)
    tail_rows(x, out, 24)  # rows 24..39: the view is rows 24..31, the kernel reads 8
    assert torch.equal(out, x[24:])


def test_a_read_beyond_the_cut_back_window_is_refused_naming_the_kernel():
    x, out = torch.randn(32, 128), torch.zeros(8, 128)
    with pytest.raises(KernelError, match=r"kernel 'copy_rows'.*lies outside the tensor "
                                          r"\[4, 128\]"):
        tail_rows(x, out, 28)  # rows 28..31 inside: the kernel's 8-row load leaves them


def test_a_window_starting_past_the_end_stops_the_run_before_any_task():
    x, out = torch.randn(32, 128), torch.zeros(8, 128)
    with pytest.raises(OrchestrationError, match="returned 3"):
        tail_rows(x, out, 40)


@pl.jit.incore
def gather_first(table: pl.Tensor[[64], pl.INT32], x: pl.Tensor[[256, 128], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 128], pl.FP32]], n: pl.Scalar[pl.INDEX]):
    for i in pl.range(n):
        block = pl.read(table, [i])
        out = pl.store(pl.load(x, [block * 16, 0], [16, 128]), [i * 16, 0], out)
    return out


@pl.jit
def paged_rows(table: pl.Tensor[[128], pl.INT32], x: pl.Tensor[[256, 128], pl.FP32],
               out: pl.Out[pl.Tensor[[64, 128], pl.FP32]], start: pl.Scalar[pl.INDEX],
               n: pl.Scalar[pl.INDEX]):
    entries = pl.slice(table, [64], [start])  # 64 entries; only the first n are read
    out = gather_first(entries, x, out, n)
    return out


def test_a_block_table_window_read_only_in_its_valid_part_runs_like_upstream():
    # 07_paged_attention_multi_config's pattern: 64 entries at 96 of a 128-entry table.
    table = torch.randint(0, 16, (128,), dtype=torch.int32)
    x, out = torch.randn(256, 128), torch.zeros(64, 128)
    paged_rows(table, x, out, 96, 4)
    expected = torch.cat([x[int(b) * 16:int(b) * 16 + 16] for b in table[96:100]])
    assert torch.equal(out[:64], expected)
    with pytest.raises(KernelError, match="kernel 'gather_first'"):
        paged_rows(table, x, out, 124, 8)  # entries 128..131 do not exist


def test_a_constant_window_past_the_end_is_refused_at_its_line():
    @pl.jit
    def fixed(x: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]]):
        out = copy_rows(pl.slice(x, [16, 128], [24, 0]), out)
        return out

    with pytest.raises(TypeCheckError, match="pl.slice"):
        fixed.lower(torch.randn(32, 128), torch.zeros(8, 128))
