"""pl.cmp and pl.sel in device code: a BOOL tile is a byte per element, pto-isa's TCMP /
TCMPS write a bit per element.  On A2/A3 the compare's mask goes through TSEL (FP16 ones
and zeros) and TCVT into bytes, and a select turns the bytes back into a mask (TCVT, TCMPS
!= 0) for TSEL, proven on pto-isa's CPU model against the simulator; A5, whose masks are
32-bit words that pto-isa's CPU model of TSEL reads as bytes, is refused at the line."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir import LoweringError
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

SHAPE = [16, 64]


@pl.jit.incore
def compares(a: pl.Tensor[[16, 64], pl.FP32], b: pl.Tensor[[16, 64], pl.FP32],
             h: pl.Tensor[[16, 64], pl.FP16], i: pl.Tensor[[16, 64], pl.INT32],
             j: pl.Tensor[[16, 64], pl.INT32],
             lt: pl.Out[pl.Tensor[[16, 64], pl.BOOL]], ne: pl.Out[pl.Tensor[[16, 64], pl.BOOL]],
             ge_s: pl.Out[pl.Tensor[[16, 64], pl.BOOL]],
             s_gt: pl.Out[pl.Tensor[[16, 64], pl.BOOL]],
             eq_i: pl.Out[pl.Tensor[[16, 64], pl.BOOL]],
             ne_i: pl.Out[pl.Tensor[[16, 64], pl.BOOL]],
             lesser: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
             picked_h: pl.Out[pl.Tensor[[16, 64], pl.FP16]]):
    x = pl.load(a, [0, 0], [16, 64])
    y = pl.load(b, [0, 0], [16, 64])
    less = pl.cmp(x, y, cmp_type=2)
    lt = pl.store(less, [0, 0], lt)
    ne = pl.store(pl.cmp(x, y, cmp_type=1), [0, 0], ne)
    lesser = pl.store(pl.sel(less, x, y), [0, 0], lesser)
    g = pl.load(h, [0, 0], [16, 64])
    big = pl.cmp(g, 0.5, cmp_type=5)
    ge_s = pl.store(big, [0, 0], ge_s)
    picked_h = pl.store(pl.sel(big, g, pl.mul(g, -2.0)), [0, 0], picked_h)
    s_gt = pl.store(pl.cmp(0.25, x, cmp_type=4), [0, 0], s_gt)
    p = pl.load(i, [0, 0], [16, 64])
    q = pl.load(j, [0, 0], [16, 64])
    eq_i = pl.store(pl.cmp(p, q, cmp_type=0), [0, 0], eq_i)
    ne_i = pl.store(pl.cmp(p, 3, cmp_type=1), [0, 0], ne_i)
    return lt, ne, ge_s, s_gt, eq_i, ne_i, lesser, picked_h


def _arguments():
    g = torch.Generator().manual_seed(29)
    a, b = (torch.randn(*SHAPE, generator=g) for _ in range(2))
    b[0, :8] = a[0, :8]  # equal pairs
    a[1, 0], b[1, 1], a[1, 2], b[1, 2] = (float("nan"),) * 4  # NaN: false but for NE
    a[2, 0], b[2, 0] = float("inf"), float("-inf")
    h = torch.randn(*SHAPE, generator=g).to(torch.float16)
    h[0, :4] = torch.tensor([0.5, float("nan"), float("inf"), -0.0])
    i = torch.randint(-4, 5, SHAPE, generator=g, dtype=torch.int32)
    j = torch.randint(-4, 5, SHAPE, generator=g, dtype=torch.int32)
    return [a, b, h, i, j, *(torch.zeros(*SHAPE, dtype=torch.bool) for _ in range(6)),
            torch.zeros(*SHAPE), torch.zeros(*SHAPE, dtype=torch.float16)]


def _incore(program, platform: str):
    (fn,) = [f for f in lower(program, get_platform(platform)).functions
             if f.func_type is FunctionType.InCore]
    return fn


def test_a_compare_is_tcmp_into_a_mask_tsel_of_ones_and_zeros_and_tcvt_to_bytes():
    fn = _incore(compares.frontend(*_arguments()), "a2a3cpu")
    source = device_kernel(fn, backend="Ascend910B").cpp
    assert source.count("TCMP(") == 3
    # 0.25 > x is x < 0.25: the mode mirrored, as for the tile-first form.
    assert source.count("CmpMode::LT") == 2 and source.count("CmpMode::GE") == 1
    assert source.count("TSEL(cmp_ones, cmp_mask_valid, cmp_ones, cmp_zeros, cmp_tmp);") == 6
    # A select turns the BOOL bytes back into a mask: TCVT to FP16, TCMPS != 0, TSEL.
    assert source.count("TCMPS(sel_mask_valid, sel_half, 0, CmpMode::NE);") == 2
    assert source.count("TCMPS(") == 5
    # The mask holds a bit per element: 64 columns are 8 bytes of a 32-byte row.
    assert "Tile<TileType::Vec, uint8_t, 16, 32, BLayout::RowMajor, 16, 8> cmp_mask_valid;" \
        in source


def test_a_compare_is_refused_at_its_line_where_device_code_cannot_make_bytes_of_it():
    @pl.jit.incore
    def lt_i(i: pl.Tensor[[16, 64], pl.INT32], out: pl.Out[pl.Tensor[[16, 64], pl.BOOL]]):
        out = pl.store(pl.cmp(pl.load(i, [0, 0], [16, 64]), 0, cmp_type=2), [0, 0], out)
        return out

    @pl.jit.incore
    def wide(x: pl.Tensor[[8, 136], pl.FP32], out: pl.Out[pl.Tensor[[8, 136], pl.BOOL]]):
        out = pl.store(pl.cmp(pl.load(x, [0, 0], [8, 136]), 0.0), [0, 0], out)
        return out

    @pl.jit.incore
    def sel_wide(x: pl.Tensor[[8, 128], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]]):
        t = pl.load(x, [0, 0], [8, 128])
        out = pl.store(pl.sel(pl.cmp(pl.cast(t, pl.FP16), 0.0), t, t), [0, 0], out)
        return out

    cases = [
        (compares.frontend(*_arguments()), "a5cpu", "Ascend950",
         r"Ascend950 backend's compare masks are 32-bit words"),
        (lt_i.frontend(torch.zeros(16, 64, dtype=torch.int32),
                       torch.zeros(16, 64, dtype=torch.bool)), "a2a3cpu", "Ascend910B",
         r"INT32 tiles for equality only, not LT"),
        (wide.frontend(torch.zeros(8, 136), torch.zeros(8, 136, dtype=torch.bool)),
         "a2a3cpu", "Ascend910B", r"a tile of 136 columns"),
        (sel_wide.frontend(torch.zeros(8, 128), torch.zeros(8, 128)), "a2a3cpu", "Ascend910B",
         r"pl.sel on device platforms: a tile of 128 columns: .* at most 64 bits"),
    ]
    for program, platform, backend, message in cases:
        with pytest.raises(LoweringError, match=message) as info:
            device_kernel(_incore(program, platform), backend=backend)
        assert "test_device_compare.py" in str(info.value)


# Slow: a CPU-model build and a simulator build.
@pytest.mark.slow
def test_compares_on_the_a2a3_cpu_model_are_the_simulators_bytes():
    lt, ne, ge_s, s_gt, eq_i, ne_i, lesser, picked_h = outputs_agreeing_with_the_simulator(
        compares, _arguments, 5, "a2a3cpu")
    a, b, h, i, j = _arguments()[:5]
    assert torch.equal(lt, a < b) and torch.equal(ne, a != b)
    assert torch.equal(ge_s, h >= 0.5) and torch.equal(s_gt, a < 0.25)
    assert torch.equal(eq_i, i == j) and torch.equal(ne_i, i != 3)
    assert ne[1, :3].all() and not lt[1, :3].any()
    exact = {"rtol": 0, "atol": 0, "equal_nan": True}
    torch.testing.assert_close(lesser, torch.where(a < b, a, b), **exact)
    torch.testing.assert_close(picked_h, torch.where(h >= 0.5, h, h * -2.0), **exact)
