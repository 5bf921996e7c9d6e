"""Upstream's layout names: `pl.ND` (row-major, what every tensor is here) is accepted
where upstream accepts it; `pl.DN` and `pl.NZ` are refused at the annotation or call that
names them for a tensor, as upstream refuses the DN shorthand, saying what to write; the
MX scale markers `pl.MX_A_ZZ` / `pl.MX_B_NN` too, saying where their bytes would be.
`pl.TileView(valid_shape=...)` in a tile annotation is the tile's valid region; its layout
and padding fields are refused, saying why."""

from __future__ import annotations

import pytest
import torch
from located_errors import raised_by

import pypto.language as pl
from pypto.ir import TypeCheckError


@pl.jit.incore
def doubled(x: pl.Tensor[[16, 128], pl.FP32, pl.ND],
            out: pl.Out[pl.Tensor[[16, 128], pl.FP32, pl.ND]]):
    out = pl.store(pl.mul(pl.load(x, [0, 0], [16, 128]), 2.0), [0, 0], out)
    return out


def test_the_nd_marker_is_the_layout_every_tensor_has():
    assert pl.ND is pl.TensorLayout.ND and pl.DN is pl.TensorLayout.DN
    assert pl.Tensor[[16, 128], pl.FP32, pl.ND] == pl.Tensor[[16, 128], pl.FP32]
    x, out = torch.randn(16, 128), torch.zeros(16, 128)
    doubled(x, out)
    assert torch.equal(out, x * 2.0)


@pytest.mark.parametrize("annotation, message", [
    ("pl.Tensor[[16, 128], pl.FP32, pl.DN]", "DN shorthand is not supported"),
    ("pl.Tensor[[16, 128], pl.FP32, pl.NZ]", "row-major here"),
    ("pl.Tensor[[16, 128], pl.FP32, pl.TensorView(layout=pl.DN)]", "only row-major"),
    ("pl.Tile[[16, 128], pl.FP16, pl.NZ]", "follows its memory space"),
    ("pl.Tensor[[16, 2], pl.FP8E8M0, pl.MX_A_ZZ]",
     "bytes lie in pto-isa's MX_A_ZZ order, the [M, K / 32] lhs scales in blocks of 16 rows x "
     "2 columns: scale (r, c) at byte (r // 16) * 16 * (K / 32) + (c // 2) * 32 + (r % 16) * 2"),
    ("pl.Tensor[[2, 32], pl.FP8E8M0, pl.MX_B_NN]",
     "blocks of 2 rows x 16 columns stored column by column"),
    ("pl.Tensor[[2, 32], pl.FP8E8M0, pl.TensorView(layout=pl.MX_B_NN)]", "only row-major"),
    ("pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec, pl.TileView(blayout=1)]",
     "pl.TileView(blayout=...) is not supported here: a tile's block layout follows its "
     "memory space and use"),
    ("pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec, pl.TileView(pad=pl.PadValue.min)]",
     "what a tile's padding holds is not part of its type here"),
    ("pl.Tile[[16, 128], pl.FP32, pl.TileView(stride=[128, 1])]",
     "a tile's elements lie row by row from its address here"),
    ("pl.Tile[[16, 128], pl.FP32, [16, 64], pl.TileView(valid_shape=[16, 32])]",
     "pl.Tile's valid region [16, 64] and its pl.TileView's [16, 32] differ"),
])
def test_other_layouts_are_refused_at_the_annotations_line(annotation, message):
    source = ("import pypto.language as pl\n\n"
              "@pl.jit.incore\n"
              f"def k(x: {annotation}):\n"
              "    return x\n")
    error, lines = raised_by(source, lambda ns: ns["k"].frontend(), TypeCheckError)
    assert message in str(error)
    assert annotation in lines[error.span.line - 1]


def test_the_mx_scale_layouts_are_refused_saying_what_to_pass():
    with pytest.raises(TypeCheckError) as info:
        _ = pl.Tensor[[16, 2], pl.FP8E8M0, pl.MX_A_ZZ]
    assert "pass the scales row-major, with no marker" in str(info.value.hint)


@pl.jit.incore
def _halves(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t: pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[16, 64])] = pl.load(
        x, [0, 0], [16, 128], valid_shape=[16, 64])
    out = pl.store(pl.set_validshape(pl.fillpad(t, pl.PadValue.zero), 16, 128), [0, 0], out)
    return out


def test_a_tile_view_states_the_tiles_valid_region():
    assert pl.Tile[[16, 128], pl.FP32, pl.TileView(valid_shape=[16, 64])] == \
        pl.Tile[[16, 128], pl.FP32, [16, 64]]
    assert pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec, pl.TileView()] == \
        pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec]
    x, out = torch.randn(16, 128), torch.empty(16, 128)
    _halves(x, out)
    assert torch.equal(out[:, :64], x[:, :64]) and torch.equal(out[:, 64:],
                                                               torch.zeros(16, 64))


def test_a_tile_view_that_disagrees_with_the_value_is_refused():
    source = ("import pypto.language as pl\n\n"
              "@pl.jit.incore\n"
              "def k(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], "
              "pl.FP32]]):\n"
              "    t: pl.Tile[[16, 128], pl.FP32, pl.TileView(valid_shape=[16, 32])] = "
              "pl.load(x, [0, 0], [16, 128])\n"
              "    out = pl.store(t, [0, 0], out)\n"
              "    return out\n")
    error, lines = raised_by(source, lambda ns: ns["k"].frontend(torch.zeros(16, 128),
                                                                 torch.zeros(16, 128)),
                             TypeCheckError)
    assert "pl.TileView" in lines[error.span.line - 1], lines[error.span.line - 1]
