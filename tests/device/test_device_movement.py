"""pl.reshape and pl.transpose in device code, proven on pto-isa's CPU model against the
simulators: a reshape is TRESHAPE (pto-isa's alias of the source's bytes) and a TMOV into
the result's own tile; a transpose is TTRANS with a tmp tile in scratch UB (and, in place,
a second scratch tile and a TMOV)."""

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
def movements(x: pl.Tensor[[16, 32], pl.FP32], h: pl.Tensor[[16, 64], pl.FP16],
              s: pl.Tensor[[16, 48], pl.INT16], q: pl.Tensor[[16, 16], pl.FP32],
              n: pl.Tensor[[8, 20], pl.FP32],
              reshaped: pl.Out[pl.Tensor[[32, 16], pl.FP32]],
              reshaped_h: pl.Out[pl.Tensor[[64, 16], pl.FP16]],
              transposed: pl.Out[pl.Tensor[[32, 16], pl.FP32]],
              transposed_s: pl.Out[pl.Tensor[[48, 16], pl.INT16]],
              square: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
              narrow: pl.Out[pl.Tensor[[20, 8], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 32])
    reshaped = pl.store(pl.add(pl.reshape(t, [32, 16]), 1.0), [0, 0], reshaped)
    reshaped_h = pl.store(pl.reshape(pl.load(h, [0, 0], [16, 64]), [64, 16]), [0, 0],
                          reshaped_h)
    transposed = pl.store(pl.transpose(t, 0, 1), [0, 0], transposed)
    transposed_s = pl.store(pl.transpose(pl.load(s, [0, 0], [16, 48]), 0, 1), [0, 0],
                            transposed_s)
    u = pl.add(pl.load(q, [0, 0], [16, 16]), 2.0)
    u = pl.transpose(u, -1, -2)  # square: the allocator may give it u's bytes
    square = pl.store(pl.mul(u, 3.0), [0, 0], square)
    narrow = pl.store(pl.transpose(pl.load(n, [0, 0], [8, 20]), 0, 1), [0, 0], narrow)
    return reshaped, reshaped_h, transposed, transposed_s, square, narrow


def _arguments():
    g = torch.Generator().manual_seed(17)
    x = torch.randn(16, 32, generator=g)
    h = torch.randn(16, 64, generator=g).to(torch.float16)
    s = torch.randint(-32768, 32768, (16, 48), generator=g, dtype=torch.int16)
    q = torch.randn(16, 16, generator=g)
    n = torch.randn(8, 20, generator=g)  # rows of 20 FP32: padded to 24 on the device
    outs = [torch.zeros(32, 16), torch.zeros(64, 16, dtype=torch.float16),
            torch.zeros(32, 16), torch.zeros(48, 16, dtype=torch.int16), torch.zeros(16, 16),
            torch.zeros(20, 8)]
    return [x, h, s, q, n, *outs]


def _source(platform: str) -> str:
    program = movements.frontend(*_arguments())
    (fn,) = [f for f in lower(program, get_platform(platform)).functions
             if f.func_type is FunctionType.InCore]
    return device_kernel(fn).cpp


def test_a_reshape_is_treshape_of_the_source_and_a_tmov_into_the_results_tile():
    source = _source("a5cpu")
    assert source.count("TRESHAPE(") == 2
    assert source.count("TTRANS(") == 4 and "trans_tmp" in source
    for line in (ln.strip() for ln in source.splitlines() if "TRESHAPE(" in ln):
        view, src = line[len("TRESHAPE("):-2].split(", ")
        # The view is declared at the source's address, and copied into a tile of its own.
        assert f"TMOV({view.split('_of_')[0]}, {view});" in source
        address = next(ln for ln in source.splitlines() if f"TASSIGN({src}, " in ln)
        assert address.replace(f"({src}, ", f"({view}, ") in source


def test_a_reshape_of_tiles_whose_rows_are_padded_is_refused_at_its_line():
    @pl.jit.incore
    def padded(x: pl.Tensor[[8, 20], pl.FP32], out: pl.Out[pl.Tensor[[20, 8], pl.FP32]]):
        out = pl.store(pl.reshape(pl.load(x, [0, 0], [8, 20]), [20, 8]), [0, 0], out)
        return out

    program = padded.frontend(torch.zeros(8, 20), torch.zeros(20, 8))
    (fn,) = [f for f in lower(program, get_platform("a2a3cpu")).functions
             if f.func_type is FunctionType.InCore]
    with pytest.raises(LoweringError, match=r"pl.reshape: the source, a \[8, 20\] FP32 tile") \
            as info:
        device_kernel(fn)
    assert "test_device_movement.py" in str(info.value) and "multiple of 8" in str(info.value)


# Slow: a CPU-model build and a simulator build per platform.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_reshape_and_transpose_on_the_cpu_model_are_the_simulators(platform):
    outputs = outputs_agreeing_with_the_simulator(movements, _arguments, 5, platform)
    reshaped, reshaped_h, transposed, transposed_s, square, narrow = outputs
    x, h, s, q, n = _arguments()[:5]
    assert torch.equal(reshaped, x.reshape(32, 16) + 1.0)
    assert torch.equal(reshaped_h, h.reshape(64, 16))
    assert torch.equal(transposed, x.T) and torch.equal(transposed_s, s.T)
    assert torch.equal(square, (q + 2.0).T * 3.0) and torch.equal(narrow, n.T)


def test_a_reinterpretation_is_a_tmov_from_a_view_at_the_sources_address():
    from reinterpret_programs import bit_view_arguments, bit_views

    program = bit_views.frontend(*bit_view_arguments())
    (fn,) = [f for f in lower(program, get_platform("a2a3cpu")).functions
             if f.func_type is FunctionType.InCore]
    source = device_kernel(fn).cpp
    # TRESHAPE takes no FP32 -> INT32 or FP16 -> BF16 on the CPU model: the view is the tile
    # declared over the source's bytes, which the TMOV copies out.
    assert "TRESHAPE(" not in source
    views = [ln.strip() for ln in source.splitlines() if ln.strip().startswith("TMOV(")]
    assert len(views) == 4
    for line in views:
        dst, view = line[len("TMOV("):-2].split(", ")
        src = view.split("_of_")[1]
        address = next(ln for ln in source.splitlines() if f"TASSIGN({src}, " in ln)
        assert address.replace(f"({src}, ", f"({view}, ") in source


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_reinterpreted_tiles_hold_their_operands_bits_on_the_cpu_model(platform):
    from reinterpret_programs import bit_view_arguments, bit_views, expected_bit_views

    outputs = outputs_agreeing_with_the_simulator(bit_views, bit_view_arguments, 4, platform)
    for got, want in zip(outputs, expected_bit_views(*bit_view_arguments()[:4]), strict=True):
        assert torch.equal(got.view(torch.uint8), want.contiguous().view(torch.uint8))
