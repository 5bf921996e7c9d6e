"""Device code converts as pl does: a cast to an integer and an integer scalar operand
saturate (docs/numerics.md), where TCVT's default and C++'s own conversion keep the low bits."""

from __future__ import annotations

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
