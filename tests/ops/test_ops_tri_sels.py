"""pl.tile.tri (TTRI) and pl.tile.sels (TSELS), upstream PyPTO's mask operators, with their
pl.tri / pl.sels spellings: both simulators bit for bit torch.tril / torch.triu and
torch.where, and pypto's torch semantics (torch_runtime); run-time diagonals and scalars,
diagonals beyond the tile, a partly written tile; the forms and arguments refused at the
user's line, upstream's older sels(lhs, rhs, select_mode) among them."""

from __future__ import annotations

import pytest
import torch
from located_errors import entry_error, raised_by
from sim_and_torch import sim_and_torch
from tri_sels_programs import (
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
from pypto.ir import ParseError, TypeCheckError
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

PLATFORMS = ["a2a3sim", "a5sim"]


def _same_bits(got: torch.Tensor, want: torch.Tensor) -> bool:
    return got.dtype == want.dtype and torch.equal(got.view(torch.uint8), want.view(torch.uint8))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tri_is_torch_tril_and_triu_of_ones(platform):
    # d = -3; then diagonals past every row and column, both ways, at run time.
    for d in (-3, 7, 2**40, -(2**40), 2**61, -(2**61)):
        outs = triangle_outputs()
        triangles(d, *outs, config=RunConfig(platform=platform))
        for n, (got, want) in enumerate(zip(written(outs), expected_triangles(d),
                                            strict=True)):
            assert _same_bits(got, want), (d, n)


def test_tri_agrees_with_its_torch_semantics():
    sim, host = sim_and_torch(triangles, [-3, *triangle_outputs()], "a2a3sim")
    for got, want in zip(written(sim[1:]), written(host[1:]), strict=True):
        assert _same_bits(got, want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_sels_is_torch_where_of_the_mask(platform):
    inputs = selection_inputs()
    for s in (2.0009765625, float("-inf")):  # an FP32 value FP16 rounds (to 2.0), -inf
        outs = selection_outputs()
        selections(*inputs, s, *outs, config=RunConfig(platform=platform))
        for n, (got, want) in enumerate(zip(outs, expected_selections(*inputs, s),
                                            strict=True)):
            assert _same_bits(got, want), (s, n)


def test_sels_agrees_with_its_torch_semantics():
    sim, host = sim_and_torch(selections, [*selection_inputs(9), -0.0, *selection_outputs()],
                              "a5sim")
    assert all(_same_bits(s, h) for s, h in zip(sim[4:], host[4:], strict=True))


@pl.jit
def narrow(x: pl.Tensor[[8, 32], pl.BF16], y: pl.Tensor[[8, 32], pl.INT8],
           a: pl.Out[pl.Tensor[[8, 32], pl.BF16]], b: pl.Out[pl.Tensor[[8, 32], pl.INT8]],
           c: pl.Out[pl.Tensor[[8, 32], pl.UINT8]]):
    """The element types device code has no TSELS for, on the simulators."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [8, 32])
        u = pl.load(y, [0, 0], [8, 32])
        m = pl.cmp(u, 0, cmp_type=2)
        a = pl.store(pl.tile.sels(m, t, pl.create_tile([8, 32], pl.BF16), 3.14159), [0, 0], a)
        b = pl.store(pl.tile.sels(m, u, pl.create_tile([8, 32], pl.INT8), 1000), [0, 0], b)
        c = pl.store(pl.tile.sels(pl.cmp(t, 0.0, cmp_type=1), pl.cast(u, pl.UINT8, mode="trunc"),
                                  pl.create_tile([8, 32], pl.UINT8), -5), [0, 0], c)
    return a, b, c


@pytest.mark.parametrize("platform", PLATFORMS)
def test_sels_of_bf16_and_bytes_rounds_and_saturates_the_scalar(platform):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(8, 32, generator=g).bfloat16()
    y = torch.randint(-128, 128, (8, 32), generator=g, dtype=torch.int8)
    x[0, :3] = 0.0
    args = [x, y, torch.zeros(8, 32, dtype=torch.bfloat16), torch.zeros(8, 32, dtype=torch.int8),
            torch.zeros(8, 32, dtype=torch.uint8)]
    sim, host = sim_and_torch(narrow, args, platform)
    for got, want in zip(sim[2:], host[2:], strict=True):
        assert _same_bits(got, want)
    negative = y < 0
    pi = torch.tensor(3.14159, dtype=torch.float64).bfloat16()
    assert _same_bits(sim[2], torch.where(negative, x, pi))
    assert _same_bits(sim[3], torch.where(negative, y, torch.tensor(127, dtype=torch.int8)))
    clamped = y.clamp(min=0).to(torch.uint8)  # the cast saturates; -5 saturates to 0
    assert _same_bits(sim[4], torch.where(x != 0, clamped, torch.tensor(0, dtype=torch.uint8)))


_IN_A_KERNEL = ("    with pl.at(level=pl.Level.CORE_GROUP):\n"
                "        t = pl.load(x, [0, 0], [16, 128])\n"
                "        m = pl.cmp(t, 0.0, cmp_type=4)\n"
                "        tmp = pl.create_tile([16, 128], pl.FP32)\n"
                "        r = {}\n")


@pytest.mark.parametrize("call, message", [
    ("pl.tile.tri(0, [16, 32], dtype=pl.BF16)", "dtype must be one of INT16, INT32, UINT16"),
    ("pl.tile.tri(0, [16, 32], dtype=pl.INT8)", "(what TTRI writes), got 'INT8'"),
    ("pl.tile.tri(0, [32])", "must be [rows, cols]"),
    ("pl.tile.tri(0, [16, 1])", "TTRI writes row-major tiles"),
    ("pl.tile.tri(1.5, [16, 32])", "diagonal is an integer"),
    ("pl.tile.tri(t, [16, 32])", "diagonal is an integer"),
    ("pl.tile.tri(0, [16, 32], valid_shape=[17, 32])",
     "valid_shape [17, 32] must be constant extents that fit in the tile [16, 32]"),
    ("pl.tri(0, [16, 32], upper=1)", "upper must be True or False"),
    ("pl.tile.sels(t, t, 1)", "sels(lhs, rhs, select_mode) is upstream's older form"),
    ("pl.tile.sels(t, t, select_mode=2)", "sels(lhs, rhs, select_mode) is upstream's older"),
    ("pl.tile.sels(m, t, tmp)", "takes four operands: mask, src, a scratch tile tmp"),
    ("pl.tile.sels(m, t, 0.5, 1)", "takes four operands"),
    ("pl.tile.sels(t, t, tmp, 1.0)", "the mask must be BOOL (from pl.cmp), got FP32"),
    ("pl.tile.sels(m[0:8, 0:128], t, tmp, 1.0)", "shape mismatch in pl.tile.sels"),
    ("pl.tile.sels(m, pl.cast(t, pl.INT32), tmp, 1.5)", "a float scalar with a INT32 operand"),
    ("pl.tile.sels(m, m, tmp, 1)", "pl.tile.sels does not support dtype BOOL"),
    ("pl.sels(m, x, tmp, 1)", "pl.tile.sels: src must be a tile"),
])
def test_a_wrong_tri_or_sels_is_refused_at_its_line(call, message):
    error, lines = entry_error(_IN_A_KERNEL.format(call), (ParseError, TypeCheckError))
    assert message in str(error)
    assert "r = " in lines[error.span.line - 1]


def test_the_older_sels_form_says_to_use_the_mask_form():
    error, _ = entry_error(_IN_A_KERNEL.format("pl.tile.sels(t, t, 1)"), TypeCheckError)
    assert "pl.tile.sels(mask, src, tmp, scalar)" in str(error)


_RUNTIME = '''
import pypto.language as pl

@pl.jit
def entry(n: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[16, 32], pl.INT32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        r = {}
        out = pl.store(r, [0, 0], out)
    return out
'''


@pytest.mark.parametrize("call, message", [
    ("pl.tile.tri(0, [16, 32], valid_shape=[n, 32])",
     "valid_shape [n, 32] must be constant extents that fit in the tile [16, 32]"),
    ("pl.tile.tri(0, [n, 32])", "`n` is a runtime value; a constant is needed here"),
    ("pl.tile.tri(0, [16, 32], upper=n > 0)", "`n` is a runtime value; a constant is needed"),
    ("pl.tile.tri(0, [16, 32], dtype=n)", "`n` is a runtime value; a constant is needed"),
])
def test_only_the_diagonal_may_be_a_runtime_value(call, message):
    source = _RUNTIME.format(call)
    error, lines = raised_by(source, lambda ns: ns["entry"].frontend(
        4, torch.zeros(16, 32, dtype=torch.int32)), (ParseError, TypeCheckError))
    assert message in str(error)
    assert "r = pl.tile.tri" in lines[error.span.line - 1]
