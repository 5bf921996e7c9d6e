"""pl.reshape of [R, 1] columns in device code: a column device code holds column-major
(its R elements are its first bytes, pypto.ir.layout) is the row [1, R] of the same bytes,
so its reshape is TRESHAPE and TMOV of the row views (upstream's kernel_online_update,
models/04_paged_attention, reshapes [16, 1] columns to [1, 16] rows and back), proven on
pto-isa's CPU model against the simulators."""

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


@pl.jit.incore
def online_update(m: pl.Tensor[[16, 1], pl.FP32], mj: pl.Tensor[[16, 1], pl.FP32],
                  o: pl.Tensor[[16, 128], pl.FP32], d: pl.Tensor[[2, 8], pl.FP32],
                  h: pl.Tensor[[32, 1], pl.FP16],
                  m_out: pl.Out[pl.Tensor[[16, 1], pl.FP32]],
                  o_out: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
                  d_out: pl.Out[pl.Tensor[[16, 1], pl.FP32]],
                  h_out: pl.Out[pl.Tensor[[1, 32], pl.FP16]]):
    mi = pl.reshape(pl.load(m, [0, 0], [16, 1]), [1, 16])  # column -> row
    mij = pl.reshape(pl.load(mj, [0, 0], [16, 1]), [1, 16])
    new = pl.maximum(mi, mij)
    alpha = pl.exp(pl.sub(mi, new))
    m_out = pl.store(pl.reshape(new, [16, 1]), [0, 0], m_out)  # row -> column
    o_out = pl.store(pl.row_expand_mul(pl.load(o, [0, 0], [16, 128]),
                                       pl.reshape(alpha, [16, 1])), [0, 0], o_out)
    d_out = pl.store(pl.reshape(pl.load(d, [0, 0], [2, 8]), [16, 1]), [0, 0], d_out)  # dense
    h_out = pl.store(pl.reshape(pl.load(h, [0, 0], [32, 1]), [1, 32]), [0, 0], h_out)
    return m_out, o_out, d_out, h_out


def _arguments():
    g = torch.Generator().manual_seed(23)
    return [torch.randn(16, 1, generator=g), torch.randn(16, 1, generator=g),
            torch.randn(16, 128, generator=g), torch.randn(2, 8, generator=g),
            torch.randn(32, 1, generator=g).to(torch.float16),
            torch.zeros(16, 1), torch.zeros(16, 128), torch.zeros(16, 1),
            torch.zeros(1, 32, dtype=torch.float16)]


def _kernel(jit_fn, args, platform="a2a3cpu"):
    (fn,) = [f for f in lower(jit_fn.frontend(*args), get_platform(platform)).functions
             if f.func_type is FunctionType.InCore]
    return device_kernel(fn)


def test_a_columns_reshape_is_treshape_and_tmov_of_its_row_view():
    source = _kernel(online_update, _arguments()).cpp
    lines = [ln.strip() for ln in source.splitlines()]
    reshapes = [ln for ln in lines if ln.startswith("TRESHAPE(")]
    assert len(reshapes) == 6
    for line in reshapes:
        view, src = line[len("TRESHAPE("):-2].split(", ")
        dst = view.split("_of_")[0]
        # The view and the result it is copied into are the result's row view when it is a
        # column, and TRESHAPE reads the source's row view when the source is one.
        assert f"TMOV({dst}, {view});" in lines
        declared = {name: next(ln for ln in lines if ln.startswith("Tile<")
                               and ln.endswith(f"> {name};")) for name in (view, dst, src)}
        for name in (view, dst, src):
            assert "BLayout::RowMajor" in declared[name], declared[name]
        assert declared[view].rsplit(" ", 1)[0] == declared[dst].rsplit(" ", 1)[0]


def test_a_reshape_of_a_column_with_padded_rows_is_refused_at_its_line():
    @pl.jit.incore
    def padded(x: pl.Tensor[[20, 1], pl.FP32], out: pl.Out[pl.Tensor[[1, 20], pl.FP32]]):
        out = pl.store(pl.reshape(pl.load(x, [0, 0], [20, 1]), [1, 20]), [0, 0], out)
        return out

    # [20, 1] FP32 is not column-major (20 elements are not whole 32-byte blocks): each
    # element is a row padded to 8.
    with pytest.raises(LoweringError, match=r"pl.reshape: the source, a \[20, 1\] FP32 tile") \
            as info:
        _kernel(padded, [torch.zeros(20, 1), torch.zeros(1, 20)])
    assert "test_device_column_reshape.py" in str(info.value)


# Slow: a CPU-model build and a simulator build per platform.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_column_reshapes_on_the_cpu_model_are_the_simulators(platform):
    m_out, o_out, d_out, h_out = outputs_agreeing_with_the_simulator(
        online_update, _arguments, 5, platform)
    m, mj, o, d, h = _arguments()[:5]
    new = torch.maximum(m, mj)
    assert torch.equal(m_out, new)
    assert torch.equal(o_out, o * torch.exp(m - new))
    assert torch.equal(d_out, d.reshape(16, 1)) and torch.equal(h_out, h.reshape(1, 32))
