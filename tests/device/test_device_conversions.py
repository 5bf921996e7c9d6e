"""Device code converts as pl does: a cast to an integer and an integer scalar operand
saturate (docs/numerics.md), where TCVT's default and C++'s own conversion keep the low bits."""

from __future__ import annotations

import re

import pytest
import torch
from cpu_models import toolchain_or_skip

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import CompileOptions, build_program, lower
from pypto.ir.types import FunctionType
from pypto.platform import get_platform
from pypto.runtime import load_artifact

# The shapes are chosen for their values (16 x 64 tiles): A2/A3's row-width hint is expected.
pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


@pl.jit
def narrowing(a: pl.Tensor, b: pl.Tensor, s: pl.Scalar[pl.INT32], small: pl.Scalar[pl.INT16],
              cast: pl.Out[pl.Tensor], scaled: pl.Out[pl.Tensor], shifted: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        cast[:] = pl.cast(a, pl.INT16)
        scaled[:] = pl.add(pl.mul(b, 40000), s)
        shifted[:] = pl.sub(pl.add(b, small), 7)
    return cast, scaled, shifted


A = torch.tensor([[70000, -70000, 5, -40000, 32767, -32768, 32768, -32769]] * 16,
                 dtype=torch.int32).repeat(1, 8)
B = torch.tensor([[6, -3, 1, 0, 2, -1, 32767, -32768]] * 16, dtype=torch.int16).repeat(1, 8)


def _arguments():
    outs = [torch.zeros(16, 64, dtype=torch.int16) for _ in range(3)]
    return [A, B, 100000, 3, *outs]


def _source(platform: str = "a5cpu") -> str:
    program = narrowing.frontend(*_arguments())
    (fn,) = [f for f in lower(program, get_platform(platform)).functions
             if f.func_type is FunctionType.InCore]
    return device_kernel(fn).cpp


def _saturated(values: torch.Tensor) -> torch.Tensor:
    return values.clamp(-32768, 32767).to(torch.int16)


def test_a_cast_to_an_integer_asks_tcvt_to_saturate():
    assert "RoundMode::CAST_RINT, SaturationMode::ON);" in _source()


def test_an_integer_scalar_that_may_not_fit_the_tile_is_saturated_first():
    source = _source()
    assert "saturate<int16_t>(INT64_C(40000))" in source  # a constant out of range
    assert "saturate<int16_t>(s)" in source  # an INT32 scalar on an INT16 tile
    assert ", small);" in source and "INT64_C(7));" in source  # these fit: as they are
    assert "__aicore__ inline T saturate(int64_t v)" in source


def test_a_kernel_whose_scalars_fit_has_no_saturate_helper():
    @pl.jit
    def scale(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(a, 3)
        return out

    program = scale.frontend(B, torch.zeros(16, 64, dtype=torch.int16))
    (fn,) = [f for f in lower(program, get_platform("a5cpu")).functions
             if f.func_type is FunctionType.InCore]
    source = device_kernel(fn).cpp
    assert "INT64_C(3));" in source and "saturate" not in source


# Slow: one CPU-model compile (5-10 s) per platform.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_narrowing_conversions_saturate_on_the_cpu_model(platform):
    toolchain_or_skip(platform)
    args = _arguments()
    artifact = build_program(narrowing.frontend(*args), CompileOptions(platform=platform))
    load_artifact(artifact).run(args)
    cast, scaled, shifted = args[4:]
    assert torch.equal(cast, _saturated(A))
    # b * 40000 is b * 32767 (wrapping, as integer arithmetic does), + 100000 is + 32767.
    product = (B.long() * 32767).to(torch.int16)
    assert torch.equal(scaled, (product.long() + 32767).to(torch.int16))
    assert torch.equal(shifted, (B.long() + 3 - 7).to(torch.int16))


@pl.jit
def to_integers(h: pl.Tensor, b: pl.Tensor, f: pl.Tensor, h8: pl.Out[pl.Tensor],
                b32: pl.Out[pl.Tensor], f16: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        h8[:] = pl.cast(h, pl.INT8)
        b32[:] = pl.cast(b, pl.INT32)
        f16[:] = pl.cast(f, pl.INT16)
    return h8, b32, f16


SPECIALS = [float("nan"), -float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 2.5, -3.5,
            126.6, 127.5, 1e4, -1e4, 4e9, -4e9, 65504.0, 1.5]
# Nothing at or above 2^31 - 1 for BF16 -> INT32: the CPU model clamps in BF16, where that
# bound rounds to 2^31, and then overflows (docs/numerics.md, "pto-isa's CPU model").
BF16_SPECIALS = [v if not v > 2**31 else -2.0**31 for v in SPECIALS]


def _float_arguments():
    rows = [SPECIALS, BF16_SPECIALS, SPECIALS]
    inputs = [torch.tensor(row * 4).repeat(16, 1).to(dtype) for row, dtype in zip(
        rows, (torch.float16, torch.bfloat16, torch.float32), strict=True)]
    outs = [torch.zeros(16, 64, dtype=dtype) for dtype in (torch.int8, torch.int32,
                                                           torch.int16)]
    return [*inputs, *outs]


def test_a_cast_of_a_float_to_an_integer_zeroes_nans_through_the_bits_first():
    program = to_integers.frontend(*_float_arguments())
    (fn,) = [f for f in lower(program, get_platform("a2a3cpu")).functions
             if f.func_type is FunctionType.InCore]
    source = device_kernel(fn).cpp
    # m = |bits|; m - (inf + 1) < 0 exactly for a number: the mask keeps numbers, zeroes NaNs.
    for abs_mask, inf in (("0x7fff", "0x7c00"), ("0x7fff", "0x7f80"),
                          ("0x7fffffff", "0x7f800000")):
        assert f", {abs_mask});" in source and f", -{inf} - 1);" in source
    assert source.count("TMINS(nan_guard") == 3 and source.count("TMAXS(nan_guard") == 3
    assert "TCVT(cast_0_tile_0, nan_guard_value, RoundMode::CAST_RINT, SaturationMode::ON);" \
        in source
    # The scratch lies above every tile the allocator placed.
    size = {"half": 2, "bfloat16_t": 2, "float": 4, "int8_t": 1, "int16_t": 2, "int32_t": 4}
    tiles = re.findall(r"Tile<TileType::Vec, (\w+), (\d+), (\d+),.*> (\w+);\n\s+"
                       r"TASSIGN\(\4, (\w+)\)", source)
    ends = [int(addr, 16) + int(r) * int(c) * size[elem] for elem, r, c, name, addr in tiles
            if not name.startswith("nan_guard")]
    guards = {int(addr, 16) for *_, name, addr in tiles if name.startswith("nan_guard")}
    assert len(guards) == 1 and min(guards) % 32 == 0 and min(guards) >= max(ends)


# Slow: one CPU-model compile per platform.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_nan_casts_to_zero_and_infinities_saturate_on_the_cpu_model_as_on_the_sim(platform):
    toolchain_or_skip(platform)
    args = _float_arguments()
    program = to_integers.frontend(*args)
    load_artifact(build_program(program, CompileOptions(platform=platform))).run(args)
    sim = _float_arguments()
    sim_platform = platform.replace("cpu", "sim")
    load_artifact(build_program(program, CompileOptions(platform=sim_platform))).run(sim)
    for got, want in zip(args[3:], sim[3:], strict=True):
        assert torch.equal(got, want)
    h8, b32, f16 = args[3:]
    assert h8[0, :4].tolist() == [0, 0, 127, -128]
    assert b32[0, :4].tolist() == [0, 0, -2**31, -2**31]
    assert f16[0, :4].tolist() == [0, 0, 32767, -32768]
