"""pl.tile.sort32 and pl.tile.mrgsort in device code: TSORT32 (with a tmp tile where a
row's last block is partial) and TMRGSORT (the single-list form, and the list form through
a helper that holds the merged counts), proven on pto-isa's CPU model against the
simulators on ties, signed zeros, infinities and NaN."""

from __future__ import annotations

import pytest
import sort_programs as sp
import torch
from cpu_models import outputs_agreeing_with_the_simulator

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
    x, ids = sp.edge_values(torch.float32, 2, 48), sp.indices(2, 48)
    source = _device_source(sp.sort_valid_columns, x, ids, torch.zeros(2, 96))
    call = source.split("TSORT32(")[1].split(")")[0]
    assert call.count(",") == 3


def test_whole_blocks_sort_without_a_tmp_tile():
    x, ids = sp.edge_values(torch.float32, 2, 64), sp.indices(2, 64)
    source = _device_source(sp.sort_rows, x, ids, torch.zeros(2, 128))
    assert source.split("TSORT32(")[1].split(")")[0].count(",") == 2


def test_fp16_rows_longer_than_a_block_are_refused_at_the_line():
    x, ids = sp.edge_values(torch.float16, 2, 64), sp.indices(2, 64)
    with pytest.raises(LoweringError, match="FP16 rows of more than 32") as info:
        _device_source(sp.sort_rows, x, ids, torch.zeros(2, 256, dtype=torch.float16))
    assert "sort_programs.py" in str(info.value)


# Slow: a CPU-model build and a simulator build per platform.  No NaN reaches TSORT32 here:
# its place is undefined (docs/numerics.md), and the CPU model's depends on the C++ library.
# (kernel, dtype, rows, columns): whole blocks; FP16 of one block; a partial last block
# of the tile's valid region (the four-operand TSORT32 with scratch).
SORTS = [(sp.sort_rows, torch.float32, 4, 96), (sp.sort_rows, torch.float16, 4, 32),
         (sp.sort_valid_columns, torch.float32, 2, 48)]


@pytest.mark.slow
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("kernel, dtype, rows, cols", SORTS,
                         ids=["fp32", "fp16", "partial_block"])
def test_sort32_on_the_cpu_model_is_the_simulators(platform, kernel, dtype, rows, cols):
    x, ids = sp.edge_values(dtype, rows, cols, nan=False), sp.indices(rows, cols, 2**31 - 40)
    per = 8 // x.element_size()
    (out,) = outputs_agreeing_with_the_simulator(
        kernel, lambda: [x, ids, torch.zeros(rows, per * cols, dtype=dtype)], 2, platform)
    assert sp.same_bits(out, torch_runtime.sort32(x, ids))


@pytest.mark.slow
@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_row_sorted_whole_on_the_cpu_model_is_the_simulators(platform):
    x, ids = sp.edge_values(torch.float32, 1, 512, nan=False), sp.indices(1, 512)
    (whole,) = outputs_agreeing_with_the_simulator(
        sp.sort_whole_row, lambda: [x, ids, torch.zeros(1, 1024)], 2, platform)
    runs = torch_runtime.mrgsort(torch_runtime.sort32(x, ids), block_len=64)
    assert sp.same_bits(whole, torch_runtime.mrgsort(runs, block_len=256))


@pytest.mark.slow
@pytest.mark.parametrize("platform", PLATFORMS)
def test_merges_on_the_cpu_model_are_the_simulators(platform):
    pairs = sp.sorted_runs(sp.edge_values(torch.float32, 1, 128))  # NaN heads included
    (groups,) = outputs_agreeing_with_the_simulator(
        sp.merge_groups, lambda: [pairs, torch.zeros(1, 256)], 1, platform)
    assert sp.same_bits(groups, torch_runtime.mrgsort(pairs, block_len=64))
    two, three, four = outputs_agreeing_with_the_simulator(
        sp.merge_lists, lambda: [pairs, torch.zeros(1, 128), torch.zeros(1, 192),
                              torch.zeros(1, 256)], 1, platform)
    runs = [pairs[:, k:k + 64] for k in (0, 64, 128, 192)]
    for got, n in ((two, 2), (three, 3), (four, 4)):
        assert sp.same_bits(got, torch_runtime.mrgsort(*runs[:n], tmp=torch.zeros(1, 64 * n)))


@pytest.mark.slow
@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_tensor_forms_on_the_cpu_model_are_the_simulators(platform):
    x, ids = sp.edge_values(torch.float32, 4, 128, nan=False), sp.indices(4, 128)
    pairs, groups, merged = outputs_agreeing_with_the_simulator(
        sp.tensor_sorts, lambda: [x, ids, torch.zeros(4, 256), torch.zeros(1, 256),
                               torch.zeros(1, 128)], 2, platform)
    assert sp.same_bits(pairs, torch_runtime.sort32(x, ids))
    assert sp.same_bits(groups, torch_runtime.mrgsort(pairs[:1], block_len=64))
    assert sp.same_bits(merged, torch_runtime.mrgsort(pairs[:1, :64], pairs[:1, 64:128]))
