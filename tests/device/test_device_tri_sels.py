"""pl.tile.tri and pl.tile.sels in device code: TTRI of the tile's valid region with its
diagonal clamped to the tile's extents (TTRI takes an `int`, and pto-isa's CPU model adds
the row to it), and TSELS by the bit mask pl.sel makes from a BOOL tile (TCVT, TCMPS != 0)
with scratch of the element type for A2/A3's scalar; proven on pto-isa's CPU models
against the simulators.  A5's TSELS, like its TSEL, is refused at the line (its masks are
32-bit words, which pto-isa's CPU model reads as bytes)."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator
from tri_sels_programs import (
    FAR,
    expected_selections,
    expected_triangles,
    selection_inputs,
    selection_outputs,
    selections,
    triangle_outputs,
    triangles,
    written,
)

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir import LoweringError
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

_BACKENDS = {"a2a3cpu": "Ascend910B", "a5cpu": "Ascend950"}


def _source(jit_fn, args: list, platform: str) -> str:
    (fn,) = [f for f in lower(jit_fn.frontend(*args), get_platform(platform)).functions
             if f.func_type is FunctionType.InCore]
    return device_kernel(fn, backend=_BACKENDS[platform]).cpp


@pytest.mark.parametrize("platform", list(_BACKENDS))
def test_tri_is_ttri_of_the_valid_region_with_the_diagonal_clamped(platform):
    source = _source(triangles, [-3, *triangle_outputs()], platform)
    assert source.count("TTRI<") == 8
    assert "TTRI<decltype(tri_0), 0>(tri_0, ((int)(INT64_C(0))));" in source
    # The valid region [12, 20] of a [16, 32] tile; the run-time d clamped to [-16, 32].
    assert "TTRI<decltype(tri_1_valid), 1>(tri_1_valid, ((int)(((d > INT64_C(-16) ? d : " \
           "INT64_C(-16)) < INT64_C(32) ? (d > INT64_C(-16) ? d : INT64_C(-16)) : " \
           "INT64_C(32)))));" in source
    # 2**40 and -2**40 are constants: clamped here.
    assert f"INT64_C({FAR})" not in source
    assert "(int)(INT64_C(32))" in source and "(int)(INT64_C(-8))" in source


def test_sels_is_tsels_by_the_mask_sel_makes():
    source = _source(selections, [*selection_inputs(), 0.5, *selection_outputs()], "a2a3cpu")
    assert source.count("TSELS(") == 6
    assert source.count("CmpMode::NE);") == 6  # the BOOL bytes back to a bit mask
    # A2/A3's TSELS keeps the scalar in tmp: scratch of the element type, not the user's.
    assert "Tile<TileType::Vec, half, 1, 32, BLayout::RowMajor, 1, 32> sels_tmp" in source
    assert "TSELS(sels_3, sels_mask_valid, cast_0, sels_tmp_3, saturate<int16_t>(" \
           "INT64_C(100000)));" in source


def test_sels_is_refused_at_its_line_where_device_code_cannot_prove_it():
    @pl.jit.incore
    def wide(x: pl.Tensor[[8, 128], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]]):
        t = pl.load(x, [0, 0], [8, 128])
        out = pl.store(pl.tile.sels(pl.cmp(t, 0.0), t, t, 1.0), [0, 0], out)
        return out

    @pl.jit.incore
    def bytes_(x: pl.Tensor[[8, 32], pl.INT8], out: pl.Out[pl.Tensor[[8, 32], pl.INT8]]):
        t = pl.load(x, [0, 0], [8, 32])
        out = pl.store(pl.tile.sels(pl.cmp(pl.cast(t, pl.FP16), 0.0), t, t, 1), [0, 0], out)
        return out

    cases = [
        (selections, [*selection_inputs(), 0.5, *selection_outputs()], "a5cpu",
         r"Ascend950 backend's compare masks are 32-bit words"),
        (wide, [torch.zeros(8, 128), torch.zeros(8, 128)], "a2a3cpu",
         r"pl.tile.sels on device platforms: a tile of 128 columns: .* at most 64 bits"),
        (bytes_, [torch.zeros(8, 32, dtype=torch.int8), torch.zeros(8, 32, dtype=torch.int8)],
         "a2a3cpu", r"A2/A3's TSELS selects 16- and 32-bit elements, not INT8"),
    ]
    for jit_fn, args, platform, message in cases:
        with pytest.raises(LoweringError, match=message) as info:
            _source(jit_fn, args, platform)
        assert "test_device_tri_sels.py" in str(info.value) or \
            "tri_sels_programs.py" in str(info.value)


@pytest.mark.slow
@pytest.mark.parametrize("platform", list(_BACKENDS))
def test_tri_on_the_cpu_models_is_the_simulators(platform):
    for d in (-3, FAR):
        outs = outputs_agreeing_with_the_simulator(
            triangles, lambda d=d: [d, *triangle_outputs()], 1, platform)
        for got, want in zip(written(outs), expected_triangles(d), strict=True):
            assert torch.equal(got, want)


@pytest.mark.slow
def test_sels_on_the_a2a3_cpu_model_is_the_simulators():
    inputs = selection_inputs()
    outs = outputs_agreeing_with_the_simulator(
        selections, lambda: [*selection_inputs(), 2.0009765625, *selection_outputs()], 4,
        "a2a3cpu")
    for got, want in zip(outs, expected_selections(*inputs, 2.0009765625), strict=True):
        assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))
