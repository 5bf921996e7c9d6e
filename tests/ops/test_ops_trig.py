"""pl.sin / pl.cos: upstream's FP32 recipe (ir/ops/trig.py), expanded by LowerCompositeOps.

Both simulators compute the expansion's primitive operators; the torch semantics of the
unexpanded operator run the same steps, so the two agree bit for bit (NaN included).  The
recipe is within 2e-7 of the true sine and cosine for |x| <= 2 pi * 1024 (upstream promises
1e-5); any dtype but FP32 is refused at the line that uses it.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest
import torch
from located_errors import raised_by

import pypto.language as pl
from pypto import ir
from pypto.debug import load_entry, torch_codegen
from pypto.debug.torch_runtime import reference
from pypto.ir import TypeCheckError, VerificationLevel
from pypto.ir.ops import trig
from pypto.runtime import RunConfig

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py

PLATFORMS = ["a2a3sim", "a5sim"]
R, C = 32, 64
LIMIT = 2 * math.pi * 1024


@pl.jit
def tensor_trig(x: pl.Tensor[[R, C], pl.FP32], s: pl.Out[pl.Tensor[[R, C], pl.FP32]],
                c: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s[:] = pl.sin(x)
        c[:] = pl.tensor.cos(x)
    return s, c


@pl.jit.incore
def tile_trig(x: pl.Tensor[[R, C], pl.FP32], s: pl.Out[pl.Tensor[[R, C], pl.FP32]],
              c: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    t = pl.load(x, [0, 0], [R, C])
    u = pl.tile.cos(t)
    t = pl.tile.sin(t)  # the operand's own name takes the result
    s = pl.store(t, [0, 0], s)
    c = pl.store(u, [0, 0], c)
    return s, c


SPECIALS = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-40, -1e-40, 1e30, -1e30,
            math.pi / 2, -math.pi / 2, math.pi, 1.5 * math.pi, 2.5 * math.pi, LIMIT, -LIMIT,
            3e4, 2.0 ** 24, float(np.float32(-1.5707963))]


def _inputs() -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    x = (torch.rand(R, C, generator=g) * 2 - 1) * LIMIT
    x[1] = (torch.rand(C, generator=g) * 2 - 1) * 8  # a few periods around 0
    x.view(-1)[:len(SPECIALS)] = torch.tensor(SPECIALS)
    # odd multiples of pi / 2, near where k changes
    x[2, :8] = torch.tensor([(k + 0.5) * math.pi for k in range(-4, 4)])
    return x


def _run(kernel, platform: str) -> tuple[torch.Tensor, torch.Tensor]:
    x = _inputs()
    s, c = torch.empty(R, C), torch.empty(R, C)
    kernel(x, s, c, config=RunConfig(platform=platform))
    return s, c


def _torch(program) -> tuple[torch.Tensor, torch.Tensor]:
    s, c = torch.empty(R, C), torch.empty(R, C)
    load_entry(torch_codegen(program), program.entry)(_inputs(), s, c)
    return s, c


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal bit for bit, any NaN matching any NaN."""
    return bool(((a.view(torch.int32) == b.view(torch.int32)) | (a.isnan() & b.isnan())).all())


def test_the_constants_are_upstreams_float_literals_rounded_once():
    literals = {"PI_INV": "0.31830988732818603515625", "PI_V2": "3.140625",
                "PI_C1": "0.0009670257568359375", "PI_C2": "6.2771141529083251953125e-7",
                "PI_C3": "1.21644916362129151821e-10", "PI_C4": "-1.0290623200529979163e-13",
                "PI_HALF_HEAD": "1.57079637050628662109375",
                "PI_HALF_TAIL": "-4.371139000189375e-8", "HALF": "0.5", "M4": "4.0",
                "NEG2": "-2.0", "ONE": "1.0", "R0": "2.604926501e-6", "R1": "-1.980894471e-4",
                "R2": "8.333049340e-3", "R3": "-1.666665792e-1"}
    for name, literal in literals.items():
        value = getattr(trig, name)
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        neighbours = [struct.unpack("<f", struct.pack("<I", b))[0] for b in (bits - 1, bits + 1)]
        exact = Fraction(literal)
        # an FP32 value, nearer the decimal than either neighbour (a C float literal's value)
        assert np.float32(value) == value, name
        assert all(abs(Fraction(value) - exact) < abs(Fraction(n) - exact)
                   for n in neighbours), name


def test_the_expansion_is_upstreams_sequence_of_operators():
    sin, cos = (trig.expansion(op) for op in ("sin", "cos"))
    assert [s.op for s in sin].count("cast") == 4 and len(sin) == 31 and len(cos) == 34
    modes = [dict(s.attrs)["mode"] for s in sin if s.op == "cast"]
    assert modes == ["round", "none", "floor", "none"]
    assert [dict(s.attrs)["mode"] for s in cos if s.op == "cast"][0] == "rint"
    assert [s.args[1] for s in sin if s.op == "sub"] == ["kp"] * 5  # t -= k * (5 parts of pi)
    constants = [a for s in cos for a in s.args if isinstance(a, float)]
    assert constants == [trig.PI_INV, trig.HALF, trig.PI_V2, trig.PI_C1, trig.PI_HALF_HEAD,
                         trig.PI_C2, trig.PI_C3, trig.PI_C4, trig.PI_HALF_TAIL, trig.HALF,
                         trig.M4, trig.NEG2, trig.ONE, trig.R0, trig.R1, trig.R2, trig.R3,
                         trig.ONE]
    assert sin[-1].dst == cos[-1].dst == "y" and sin[-1].args == ("s", "p")


@pytest.mark.parametrize("kernel", [tensor_trig, tile_trig], ids=["tensor", "tile"])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_simulators_compute_the_torch_semantics_bit_for_bit(kernel, platform):
    s, c = _run(kernel, platform)
    x = _inputs()
    # the operator's own semantics (the program as written) and the expanded program
    for program in (kernel.frontend(x, s, c), kernel.lower(x, s, c,
                                                           config=RunConfig(platform=platform))):
        ts, tc = _torch(program)
        assert _same_bits(s, ts) and _same_bits(c, tc)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_nan_gives_nan_and_the_zeros_give_the_recipes_values(platform):
    s, c = _run(tile_trig, platform)
    assert s[0, 0].isnan() and c[0, 0].isnan()
    # sin(-0.0) is +0.0 (t = -0 - k pi ends +0; torch.sin keeps the sign), and cos(0) is
    # the polynomial at the FP32 pi / 2: one ulp above 1 (docs/numerics.md)
    assert s[0, 3].item() == 0.0 and math.copysign(1.0, s[0, 4].item()) == 1.0
    assert c[0, 3].item() == c[0, 4].item() == 1 + 2 ** -23


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_simulators_are_within_2e_7_of_the_true_values_for_x_up_to_2_pi_1024(platform):
    x = _inputs()
    s, c = _run(tensor_trig, platform)
    inside = x.abs() <= LIMIT
    assert int(inside.sum()) > 2000
    for got, fn in ((s, torch.sin), (c, torch.cos)):
        err = (got.double() - fn(x.double())).abs()[inside]
        assert err.max().item() < 2e-7


def test_the_recipe_is_within_2e_7_over_a_dense_sweep_of_the_range():
    x = torch.cat([torch.linspace(-LIMIT, LIMIT, 400_001),
                   torch.linspace(-8, 8, 100_001)]).float()
    for op, fn in (("sin", torch.sin), ("cos", torch.cos)):
        err = (reference(op)(x).double() - fn(x.double())).abs()
        assert err.max().item() < 2e-7, op


def test_far_outside_the_range_the_result_loses_accuracy():
    x = (torch.rand(10_000, generator=torch.Generator().manual_seed(3)) * 2 - 1) * 1e6
    err = (reference("sin")(x).double() - torch.sin(x.double())).abs()
    assert 1e-3 < err.max().item() < 0.1  # docs/numerics.md: about 3e-2 at |x| ~ 1e6


@pytest.mark.parametrize("spelling, dtype", [("pl.sin", "FP16"), ("pl.tensor.cos", "BF16"),
                                             ("pl.tile.sin", "INT32"), ("pl.cos", "FP16")])
def test_a_dtype_other_than_fp32_is_refused_at_its_line(spelling, dtype):
    if spelling == "pl.tile.sin" or spelling == "pl.cos":
        body = (f"    t = pl.load(x, [0, 0], [16, 64])\n"
                f"    out = pl.store({spelling}(t), [0, 0], out)\n")
        source = ("import pypto.language as pl\n\n@pl.jit.incore\n"
                  f"def k(x: pl.Tensor[[16, 64], pl.{dtype}], "
                  f"out: pl.Out[pl.Tensor[[16, 64], pl.{dtype}]]):\n{body}    return out\n")
    else:
        source = ("import pypto.language as pl\n\n@pl.jit\n"
                  f"def k(x: pl.Tensor[[16, 64], pl.{dtype}], "
                  f"out: pl.Out[pl.Tensor[[16, 64], pl.{dtype}]]):\n"
                  "    with pl.at(level=pl.Level.CORE_GROUP):\n"
                  f"        out[:] = {spelling}(x)\n    return out\n")
    torch_dtype = {"FP16": torch.float16, "BF16": torch.bfloat16, "INT32": torch.int32}[dtype]
    err, lines = raised_by(source, lambda ns: ns["k"].frontend(
        torch.zeros(16, 64, dtype=torch_dtype), torch.zeros(16, 64, dtype=torch_dtype)),
                           TypeCheckError)
    op = spelling.split(".")[-1]
    assert f"pl.{op} is FP32-only" in err.message and dtype in err.message
    assert "pl.cast(x, pl.FP32)" in err.hint
    assert spelling in lines[err.span.line - 1]


def test_a_scalar_operand_is_refused():
    source = ("import pypto.language as pl\n\n@pl.jit.incore\n"
              "def k(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):\n"
              "    t = pl.load(x, [0, 0], [16, 64])\n"
              "    out = pl.store(pl.mul(t, pl.sin(t[0, 0])), [0, 0], out)\n    return out\n")
    err, lines = raised_by(source, lambda ns: ns["k"].frontend(torch.zeros(16, 64),
                                                               torch.zeros(16, 64)),
                           TypeCheckError)
    assert "pl.sin takes a tensor or tile" in err.message
    assert "pl.sin(" in lines[err.span.line - 1]


@pytest.mark.parametrize("kernel", [tensor_trig, tile_trig], ids=["tensor", "tile"])
def test_the_program_prints_and_parses_back_before_and_after_every_pass(kernel):
    x = _inputs()
    program = kernel.frontend(x, torch.empty(R, C), torch.empty(R, C))
    assert "pl.sin(" in program.as_python() or "pl.tile.sin(" in program.as_python()
    assert pl.parse(program.as_python()) == program
    compiled = ir.compile(program, dump_passes=False, platform="a5sim",
                          verification_level=VerificationLevel.ROUNDTRIP)
    s, c = torch.empty(R, C), torch.empty(R, C)
    compiled(x, s, c)
    want_s, want_c = _run(kernel, "a5sim")
    assert _same_bits(s, want_s) and _same_bits(c, want_c)
