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


@pl.jit.incore
def first_cols(x: pl.Tensor[[16, 128], pl.FP32, pl.TensorView(valid_shape=[16, pl.dynamic("V")],
                                                              layout=pl.TensorLayout.ND)],
               out: pl.Out[pl.Tensor[[16, 128], pl.FP32]], n: pl.Scalar[pl.INDEX]):
    t = pl.load(x, [0, 0], [16, 128], valid_shape=[16, n])
    out = pl.store(t, [0, 0], out)  # the valid region: n columns
    return out


@pl.jit
def masked(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
           n: pl.Scalar[pl.INDEX], m: pl.Scalar[pl.INDEX]):
    part = pl.slice(x, [16, 128], [0, 0], valid_shape=[16, n])  # the task sees n columns
    out = first_cols(part, out, m)
    return out


def test_a_view_with_a_runtime_valid_shape_hands_the_task_only_that_part():
    x, out = torch.randn(16, 128), torch.zeros(16, 128)
    masked(x, out, 40, 40)
    assert torch.equal(out[:, :40], x[:, :40])
    with pytest.raises(KernelError, match=r"kernel 'first_cols'.*lies outside the tensor "
                                          r"\[16, 40\]"):
        masked(x, out, 40, 48)  # the kernel reads 48 columns of a 40-column view


def test_a_tensor_slice_with_valid_shape_in_a_kernel_is_refused_at_its_line():
    @pl.jit.incore
    def kernel(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
        part = pl.slice(x, [16, 128], [0, 0], valid_shape=[16, 64])
        out = pl.store(pl.load(part, [0, 0], [16, 128]), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match="give valid_shape to the pl.load"):
        kernel.lower(torch.zeros(16, 128), torch.zeros(16, 128))


@pytest.mark.parametrize("view, message", [
    ("pl.TensorView(layout=pl.TensorLayout.DN)", "only row-major"),
    ("pl.TensorView(stride=[256, 1], layout=pl.TensorLayout.ND)", "strides come with it"),
    ("pl.TensorView(valid_shape=[16, 64])", "needs layout="),
    ("pl.TensorView(valid_shape=[16, 256], layout=pl.TensorLayout.ND)", "must fit"),
])
def test_what_a_tensor_view_cannot_mean_here_is_refused_at_the_annotation(view, message):
    with pytest.raises(TypeCheckError, match=message):
        eval(f"pl.Tensor[[16, 128], pl.FP32, {view}]", {"pl": pl})  # noqa: S307


@pl.jit.incore
def flag(out: pl.Out[pl.Tensor[[16, 128], pl.FP32]], on: pl.Scalar[pl.BOOL]):
    if on:
        out = pl.store(pl.full([16, 128], dtype=pl.FP32, value=1.0), [0, 0], out)
    else:
        out = pl.store(pl.full([16, 128], dtype=pl.FP32, value=0.0), [0, 0], out)
    return out


@pl.jit
def flags(out: pl.Out[pl.Tensor[[16, 128], pl.FP32]], k: pl.Scalar[pl.INDEX]):
    if k > 0:  # noqa: SIM108 - the DSL's runtime `if`: pl.yield_ in each branch
        on = pl.yield_(k)  # an integer passed for a BOOL parameter: non-zero is true
    else:
        on = pl.yield_(0)
    out = flag(out, on)
    return out


@pytest.mark.parametrize("k, expected", [(2, 1.0), (0, 0.0)])
def test_an_integer_passed_for_a_bool_parameter_is_true_when_non_zero(k, expected):
    out = torch.zeros(16, 128)
    flags(out, k)
    assert torch.equal(out, torch.full((16, 128), expected))
