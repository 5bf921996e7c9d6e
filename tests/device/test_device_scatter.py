"""pl.tile.scatter and pl.scatter in device code, proven on pto-isa's CPU models against the
simulators.  TSCATTER zeroes its whole destination tile first on A2/A3 and A5 (not in the
CPU model), so the device code scatters into zeroed scratch tiles and keeps dst's other
elements by an integer merge ((dst | M) ^ M) | V: each dtype width (FP32, FP16 / BF16 /
INT16, INT8), a repeated index (the later element stays), a partial index tile (its
padding not written) and the tensor form's row-by-row lowering (load, TSCATTER, store)."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator
from scatter_programs import C, K, R, row_scattered, scatter_in_tile, scatter_rows, scattered

pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")]

CASES = {"FP32": (torch.float32, torch.int32), "BF16": (torch.bfloat16, torch.uint16),
         "INT16": (torch.int16, torch.int16), "INT8": (torch.int8, torch.int16)}


def _values(dtype: torch.dtype, shape, g) -> torch.Tensor:
    if dtype.is_floating_point:
        return (torch.randn(*shape, generator=g) * 50).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max + 1, shape, generator=g, dtype=torch.int64).to(dtype)


def _arguments(dtype: torch.dtype, index_dtype: torch.dtype):
    def make():
        g = torch.Generator().manual_seed(11)
        at = torch.randint(0, R * C, (2, K), generator=g)
        at[0, 3], at[1, 5] = 77, 77  # a repeated index: src[1, 5] stays
        at[:, 12:] = 0  # outside the valid region: index 0 keeps dst's element
        return [_values(dtype, (R, C), g), _values(dtype, (2, K), g), at.to(index_dtype),
                torch.zeros(R, C, dtype=dtype)]
    return make


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_tile_scatter_agrees_with_the_simulator_keeping_dsts_other_elements(case, platform):
    dtype, index_dtype = CASES[case]
    arguments = _arguments(dtype, index_dtype)
    d, s, at, _ = arguments()
    want = scattered(d, at[:, :12], s[:, :12])
    (got,) = outputs_agreeing_with_the_simulator(scatter_in_tile, arguments, 3, platform)
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))
    assert torch.equal(got.reshape(-1)[77:78].view(torch.uint8), s[1, 5:6].view(torch.uint8))


def _tensor_arguments():
    g = torch.Generator().manual_seed(12)
    index = torch.randint(0, 40, (8, 6), generator=g, dtype=torch.int32)
    index[2, :3] = 9  # three writes of one element of row 2: src[2, 2] stays
    return [torch.randn(8, 40, generator=g), index, torch.randn(8, 6, generator=g)]


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_a_tensor_level_scatter_agrees_with_the_simulator(platform):
    t, index, src = _tensor_arguments()
    want = row_scattered(t, index, src)
    got = outputs_agreeing_with_the_simulator(scatter_rows, _tensor_arguments, 0, platform)[0]
    assert torch.equal(got, want) and got[2, 9] == src[2, 2]
