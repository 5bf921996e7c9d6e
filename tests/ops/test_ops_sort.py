"""pl.tile.sort32 and pl.tile.mrgsort on both simulators: bit for bit their torch semantics
(torch_runtime), and, where the orders are defined, torch.sort(descending=True,
stable=True); ties, signed zeros, infinities, a partial last block, 32-bit indices, NaN;
the forms and arguments refused at the user's line."""

from __future__ import annotations

import pytest
import torch
from located_errors import raised_by
from sim_and_torch import sim_and_torch
from sort_programs import (
    edge_values,
    indices,
    merge_groups,
    merge_lists,
    same_bits,
    sort_fp16_row,
    sort_rows,
    sort_valid_columns,
    sort_whole_row,
    sorted_runs,
    split_in_kernel,
    split_pairs,
    tensor_sorts,
)

from pypto.debug import torch_runtime
from pypto.ir import TypeCheckError
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

PLATFORMS = ["a2a3sim", "a5sim"]


def _torch_blocks(x: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's blocks of 32 sorted by torch.sort(descending=True, stable=True), with
    the indices carried: the order sort32 defines where indices ascend."""
    values, carried = [], []
    for j in range(0, x.shape[1], 32):
        v, order = torch.sort(x[:, j:j + 32], dim=1, descending=True, stable=True)
        values.append(v)
        carried.append(torch.gather(ids[:, j:j + 32].view(torch.int32), 1, order))
    return torch.cat(values, 1), torch.cat(carried, 1).view(torch.uint32)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype, cols", [(torch.float32, 96), (torch.float16, 64),
                                         (torch.float32, 48)])
def test_sort32_is_torch_sort_of_each_block(platform, dtype, cols):
    x, ids = edge_values(dtype, 4, cols, nan=False), indices(4, cols, start=2**31 - 100)
    per = 8 // x.element_size()
    out = torch.zeros(4, per * cols, dtype=dtype)
    sort_rows(x, ids, out, config=RunConfig(platform=platform))
    assert same_bits(out, torch_runtime.sort32(x, ids))
    values, carried = split_pairs(out)
    want_values, want_ids = _torch_blocks(x, ids)
    assert same_bits(values, want_values)  # ties by the smaller index; -0.0 == +0.0
    assert torch.equal(carried.view(torch.int32), want_ids.view(torch.int32))
    if dtype == torch.float16:
        assert not out.reshape(4, -1, 4)[..., 1].view(torch.int16).any()  # the pad is 0


@pytest.mark.parametrize("platform", PLATFORMS)
def test_signed_zeros_are_equal_values_kept_in_index_order(platform):
    x, ids = edge_values(torch.float32, 1, 32, nan=False), indices(1, 32)
    out = torch.zeros(1, 64)
    sort_rows(x, ids, out, config=RunConfig(platform=platform))
    values, carried = split_pairs(out)
    zeros = carried[values == 0].view(torch.int32).tolist()
    assert zeros == [8, 9, 10]  # -0.0, +0.0, -0.0 as they came
    assert torch.signbit(values[values == 0]).tolist() == [True, False, True]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_partial_last_block_of_the_valid_region_is_sorted_alone(platform):
    x, ids = edge_values(torch.float32, 2, 48, nan=False), indices(2, 48)
    (*_, out), (*_, host) = sim_and_torch(sort_valid_columns, [x, ids, torch.zeros(2, 96)],
                                          platform)
    assert same_bits(out, torch_runtime.sort32(x, ids))
    assert same_bits(host, out)  # torch_codegen sorts the valid region alone too
    values, _ = split_pairs(out)
    assert same_bits(values[:, 32:], torch.sort(x[:, 32:], dim=1, descending=True,
                                                stable=True).values)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_a_nan_lands_where_the_stable_merge_order_puts_it(platform, dtype):
    x, ids = edge_values(dtype, 2, 32), indices(2, 32)
    per = 8 // x.element_size()
    out = torch.zeros(2, per * 32, dtype=dtype)
    sort_rows(x, ids, out, config=RunConfig(platform=platform))
    assert same_bits(out, torch_runtime.sort32(x, ids))
    values, carried = split_pairs(out)
    assert sorted(carried[0].view(torch.int32).tolist()) == list(range(32))  # a permutation
    assert values[0].isnan().sum() == 2
    assert same_bits(values[1], _torch_blocks(x[1:], ids[1:])[0][0])  # the NaN-free row


@pytest.mark.parametrize("platform", PLATFORMS)
def test_sort32_then_mrgsort_sort_a_row_whole(platform):
    x, ids = edge_values(torch.float32, 1, 512, nan=False), indices(1, 512)
    out = torch.zeros(1, 1024)
    sort_whole_row(x, ids, out, config=RunConfig(platform=platform))
    runs = torch_runtime.mrgsort(torch_runtime.sort32(x, ids), block_len=64)
    assert same_bits(out, torch_runtime.mrgsort(runs, block_len=256))
    values, carried = split_pairs(out)
    want, order = torch.sort(x, dim=1, descending=True, stable=True)
    assert same_bits(values, want)  # a tie across runs comes from the earlier run
    assert torch.equal(carried.view(torch.int32), order.to(torch.int32))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pairs_split_in_a_kernel_by_reshape_slice_and_reinterpret_view(platform):
    x, ids = edge_values(torch.float32, 1, 32, nan=False), indices(1, 32, start=2**31 - 8)
    values, carried = torch.zeros(32, 1), torch.zeros(32, 1, dtype=torch.int32)
    split_in_kernel(x, ids, values, carried.view(torch.uint32),
                    config=RunConfig(platform=platform))
    want, order = torch.sort(x[0], descending=True, stable=True)
    assert same_bits(values[:, 0], want)
    assert torch.equal(carried[:, 0], ids[0].view(torch.int32)[order])


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fp16_pairs_sort_and_merge_as_fp32_ones(platform):
    x, ids = edge_values(torch.float16, 1, 128, nan=False), indices(1, 128)
    whole, halves = torch.zeros(1, 512, dtype=torch.float16), torch.zeros(1, 256,
                                                                          dtype=torch.float16)
    sort_fp16_row(x, ids, whole, halves, config=RunConfig(platform=platform))
    pairs = torch_runtime.sort32(x, ids)
    assert same_bits(whole, torch_runtime.mrgsort(pairs, block_len=128))
    assert same_bits(halves, torch_runtime.mrgsort(pairs[:, :128], pairs[:, 128:256],
                                                   tmp=torch.zeros(1, 256)))
    values, carried = split_pairs(whole)
    want, order = torch.sort(x, dim=1, descending=True, stable=True)
    assert same_bits(values, want)
    assert torch.equal(carried.view(torch.int32), order.to(torch.int32))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_mrgsort_merges_2_3_and_4_lists_and_groups_of_runs(platform):
    pairs = sorted_runs(edge_values(torch.float32, 1, 128))  # NaN heads in run 0
    outs = [torch.zeros(1, 128), torch.zeros(1, 192), torch.zeros(1, 256)]
    merge_lists(pairs, *outs, config=RunConfig(platform=platform))
    runs = [pairs[:, k:k + 64] for k in (0, 64, 128, 192)]
    for got, n in zip(outs, (2, 3, 4), strict=True):
        assert same_bits(got, torch_runtime.mrgsort(*runs[:n], tmp=torch.zeros(1, 64 * n)))
    groups = torch.zeros(1, 256)
    merge_groups(pairs, groups, config=RunConfig(platform=platform))
    assert same_bits(groups, torch_runtime.mrgsort(pairs, block_len=64))
    assert same_bits(groups, outs[2])  # one group of 4 runs is the 4-list merge


def test_mrgsort_without_nan_is_torch_sort_of_the_runs_together():
    x = edge_values(torch.float32, 1, 128, nan=False)
    merged = torch_runtime.mrgsort(*(sorted_runs(x)[:, k:k + 64] for k in (0, 64, 128)),
                                   tmp=torch.zeros(1, 192))
    values, carried = split_pairs(merged)
    want, order = torch.sort(x[:, :96], dim=1, descending=True, stable=True)
    assert same_bits(values, want)
    assert torch.equal(carried.view(torch.int32), order.to(torch.int32))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_tensor_forms_compute_as_the_tile_forms(platform):
    x, ids = edge_values(torch.float32, 4, 128), indices(4, 128)
    args = [x, ids, torch.zeros(4, 256), torch.zeros(1, 256), torch.zeros(1, 128)]
    sim, host = sim_and_torch(tensor_sorts, args, platform)
    pairs = torch_runtime.sort32(x, ids)
    assert same_bits(sim[2], pairs)
    assert same_bits(sim[3], torch_runtime.mrgsort(pairs[:1], block_len=64))
    assert same_bits(sim[4], torch_runtime.mrgsort(pairs[:1, :64], pairs[:1, 64:128]))
    for got, want in zip(sim[2:], host[2:], strict=True):
        assert same_bits(got, want)


_KERNEL = """
import pypto.language as pl


@pl.jit.incore
def kernel(x: pl.Tensor[[2, 256], pl.FP32], ids: pl.Tensor[[2, 256], pl.UINT32],
           out: pl.Out[pl.Tensor[[2, 256], pl.FP32]]):
    t = pl.load(x, [0, 0], [1, 64])
    i = pl.load(ids, [0, 0], [1, 64])
    s = {statement}
    return out
"""
_REFUSED = {
    "idx of another dtype": (
        "pl.tile.sort32(t, pl.full([1, 64], pl.INT32, 0))", "idx must be a UINT32 tile"),
    "a tensor and a tile": ("pl.sort32(x, i)", "mixes a tensor and a tile"),
    "tmp of a tensor form": ("pl.tensor.mrgsort(x[0:1, 0:64], x[1:2, 0:64], tmp=t)",
                             "takes no tmp"),
    "an integer src": ("pl.tile.sort32(i, i)", "does not support dtype UINT32"),
    "exhausted": ("pl.tile.mrgsort(t, t, tmp=pl.create_tile([1, 128], pl.FP32), "
                  "exhausted=True)", "exhausted=True"),
    "a block_len not a multiple of 64": ("pl.tile.mrgsort(t, block_len=16)",
                                         "positive multiple of 64"),
    "groups that do not tile the row": ("pl.tile.mrgsort(t, block_len=64)", "1 to 255"),
    "both forms": ("pl.tile.mrgsort(t, t, block_len=64)", "two forms"),
    "no tmp": ("pl.tile.mrgsort(t, t)", "needs tmp="),
    "a tmp too small": ("pl.tile.mrgsort(t, t, tmp=pl.create_tile([1, 64], pl.FP32))",
                        "at least the sources' 128 columns"),
    "several rows": ("pl.tile.mrgsort(pl.load(x, [0, 0], [2, 256]), block_len=64)",
                     "must be one row"),
    "a partly valid run": ("pl.tile.mrgsort(t, pl.load(x, [0, 0], [1, 64], valid_shape=[1, 32]), "
                           "tmp=pl.create_tile([1, 128], pl.FP32))", "must be fully valid"),
}


@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_what_the_sorts_refuse_is_an_error_at_the_line(case):
    statement, message = _REFUSED[case]
    args = (torch.zeros(2, 256), torch.zeros(2, 256, dtype=torch.int32).view(torch.uint32),
            torch.zeros(2, 256))
    error, lines = raised_by(_KERNEL.format(statement=statement),
                             lambda ns: ns["kernel"].frontend(*args), TypeCheckError)
    assert message in str(error)
    assert lines[error.span.line - 1].strip().startswith("s = ")
