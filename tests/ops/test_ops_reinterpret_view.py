"""`pl.reinterpret_view(x, dtype, shape=None)`: the same bytes seen as another element type.

Upstream's zero-copy reinterpretation: no value is converted, so the result is torch's
`x.view(dtype)` bit for bit (NaN payloads, -0.0, subnormals included), on tiles and on a
tensor in a `pl.at` block alike, with x's last dimension scaled by the element sizes or a
byte-equivalent `shape=`.
"""

from __future__ import annotations

import pytest
import torch
from located_errors import entry_error
from reinterpret_programs import bit_view_arguments, bit_views, expected_bit_views

import pypto.language as pl
from pypto.ir import ParseError, TypeCheckError
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

PLATFORMS = ["a2a3sim", "a5sim"]


def _same_bits(got: torch.Tensor, want: torch.Tensor) -> bool:
    return got.dtype == want.dtype and torch.equal(got.view(torch.uint8),
                                                   want.contiguous().view(torch.uint8))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_reinterpreted_tile_holds_its_operands_bits(platform):
    args = bit_view_arguments()
    bit_views(*args, config=RunConfig(platform=platform))
    for got, want in zip(args[4:], expected_bit_views(*args[:4]), strict=True):
        assert _same_bits(got, want)


@pl.jit
def tensor_view(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(pl.reinterpret_view(x, pl.INT32), 1)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_tensor_reinterpreted_in_a_kernel_is_its_bits(platform):
    x = torch.randn(16, 64)
    x[0, 0] = -0.0
    out = torch.empty(16, 64, dtype=torch.int32)
    tensor_view(x, out, config=RunConfig(platform=platform))
    assert torch.equal(out, x.view(torch.int32) + 1)


def test_the_torch_reference_is_the_same_bits():
    from pypto.debug.torch_runtime import reinterpret_view

    x = torch.tensor([[1.0, -0.0, float("nan")]])
    assert torch.equal(reinterpret_view(x, "INT32"), x.view(torch.int32))
    assert reinterpret_view(x, "FP16").shape == (1, 6)
    assert torch.equal(reinterpret_view(x, "INT16", [3, 2]), x.view(torch.int16).reshape(3, 2))


_IN_A_KERNEL = "    with pl.at(level=pl.Level.CORE_GROUP):\n        t = pl.load(x, [0, 0], {})\n"


@pytest.mark.parametrize("tile, call, message", [
    ("[16, 128]", "pl.reinterpret_view(t, pl.FP32)", "the value is FP32 already"),
    ("[16, 3]", "pl.reinterpret_view(t, pl.FP16, shape=[16, 5])",
     "[16, 3] FP32 is 192 bytes, [16, 5] FP16 is 160"),
    ("[16, 128]", "pl.reinterpret_view(t, 4)", "needs a pl dtype"),
    ("[16, 3]", "pl.reinterpret_view(t, pl.INT64)",
     "a row of [16, 3] FP32 is 12 bytes, not a whole number of INT64 elements"),
    ("[16, 128]", "pl.reinterpret_view(pl.set_validshape(t, 8, 128), pl.INT32)",
     "of a partially valid tile"),
])
def test_a_wrong_reinterpretation_is_refused_at_its_line(tile, call, message):
    body = _IN_A_KERNEL.format(tile) + f"        u = {call}\n"
    error, lines = entry_error(body, (ParseError, TypeCheckError))
    assert message in str(error)
    assert "pl.reinterpret_view" in lines[error.span.line - 1]

