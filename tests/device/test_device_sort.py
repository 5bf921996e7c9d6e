"""pl.tile.sort32 and pl.tile.mrgsort in device code: TSORT32 (with a tmp tile where a
row's last block is partial) and TMRGSORT (the single-list form, and the list form through
a helper that holds the merged counts), proven on pto-isa's CPU model against the
simulators on ties, signed zeros, infinities and NaN."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator
from sort_programs import (
    edge_values,
    indices,
    merge_groups,
    merge_lists,
    same_bits,
    sort_rows,
    sort_valid_columns,
    sort_whole_row,
    sorted_runs,
    tensor_sorts,
)

from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.debug import torch_runtime
from pypto.ir import LoweringError
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

PLATFORMS = ["a2a3cpu", "a5cpu"]


def _device_source(jit_fn, *args) -> str:
    program = jit_fn.frontend(*args)
    return "".join(device_kernel(f).cpp for f in lower(program, get_platform("a2a3cpu")).functions
                   if f.func_type is FunctionType.InCore)


def test_a_partial_last_block_sorts_with_a_tmp_tile():
    x, ids = edge_values(torch.float32, 2, 48), indices(2, 48)
    source = _device_source(sort_valid_columns, x, ids, torch.zeros(2, 96))
    call = source.split("TSORT32(")[1].split(")")[0]
    assert call.count(",") == 3


def test_whole_blocks_sort_without_a_tmp_tile():
    x, ids = edge_values(torch.float32, 2, 64), indices(2, 64)
    source = _device_source(sort_rows, x, ids, torch.zeros(2, 128))
    assert source.split("TSORT32(")[1].split(")")[0].count(",") == 2


def test_fp16_rows_longer_than_a_block_are_refused_at_the_line():
    x, ids = edge_values(torch.float16, 2, 64), indices(2, 64)
    with pytest.raises(LoweringError, match="FP16 rows of more than 32") as info:
        _device_source(sort_rows, x, ids, torch.zeros(2, 256, dtype=torch.float16))
    assert "sort_programs.py" in str(info.value)


# Slow: a CPU-model build and a simulator build per platform.  No NaN reaches TSORT32 here:
# its place is undefined (docs/numerics.md), and the CPU model's depends on the C++ library.
@pytest.mark.slow
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype, cols", [(torch.float32, 96), (torch.float16, 32)])
def test_sort32_on_the_cpu_model_is_the_simulators(platform, dtype, cols):
    x, ids = edge_values(dtype, 4, cols, nan=False), indices(4, cols, start=2**31 - 40)
    per = 8 // x.element_size()
    (out,) = outputs_agreeing_with_the_simulator(
        sort_rows, lambda: [x, ids, torch.zeros(4, per * cols, dtype=dtype)], 2, platform)
    assert same_bits(out, torch_runtime.sort32(x, ids))


@pytest.mark.slow
@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_partial_last_block_on_the_cpu_model_is_the_simulators(platform):
    x, ids = edge_values(torch.float32, 2, 48, nan=False), indices(2, 48)
    (out,) = outputs_agreeing_with_the_simulator(
        sort_valid_columns, lambda: [x, ids, torch.zeros(2, 96)], 2, platform)
    assert same_bits(out, torch_runtime.sort32(x, ids))


@pytest.mark.slow
@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_row_sorted_whole_on_the_cpu_model_is_the_simulators(platform):
    x, ids = edge_values(torch.float32, 1, 512, nan=False), indices(1, 512)
    (whole,) = outputs_agreeing_with_the_simulator(
        sort_whole_row, lambda: [x, ids, torch.zeros(1, 1024)], 2, platform)
    runs = torch_runtime.mrgsort(torch_runtime.sort32(x, ids), block_len=64)
    assert same_bits(whole, torch_runtime.mrgsort(runs, block_len=256))


@pytest.mark.slow
@pytest.mark.parametrize("platform", PLATFORMS)
def test_merges_on_the_cpu_model_are_the_simulators(platform):
    pairs = sorted_runs(edge_values(torch.float32, 1, 128))  # NaN heads included
    (groups,) = outputs_agreeing_with_the_simulator(
        merge_groups, lambda: [pairs, torch.zeros(1, 256)], 1, platform)
    assert same_bits(groups, torch_runtime.mrgsort(pairs, block_len=64))
    two, three, four = outputs_agreeing_with_the_simulator(
        merge_lists, lambda: [pairs, torch.zeros(1, 128), torch.zeros(1, 192),
                              torch.zeros(1, 256)], 1, platform)
    runs = [pairs[:, k:k + 64] for k in (0, 64, 128, 192)]
    for got, n in ((two, 2), (three, 3), (four, 4)):
        assert same_bits(got, torch_runtime.mrgsort(*runs[:n], tmp=torch.zeros(1, 64 * n)))


@pytest.mark.slow
@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_tensor_forms_on_the_cpu_model_are_the_simulators(platform):
    x, ids = edge_values(torch.float32, 4, 128, nan=False), indices(4, 128)
    pairs, groups, merged = outputs_agreeing_with_the_simulator(
        tensor_sorts, lambda: [x, ids, torch.zeros(4, 256), torch.zeros(1, 256),
                               torch.zeros(1, 128)], 2, platform)
    assert same_bits(pairs, torch_runtime.sort32(x, ids))
    assert same_bits(groups, torch_runtime.mrgsort(pairs[:1], block_len=64))
    assert same_bits(merged, torch_runtime.mrgsort(pairs[:1, :64], pairs[:1, 64:128]))
