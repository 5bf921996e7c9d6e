"""Upstream's layout names: `pl.ND` (row-major, what every tensor is here) is accepted
where upstream accepts it; `pl.DN` and `pl.NZ` are refused at the annotation or call that
names them for a tensor, as upstream refuses the DN shorthand, saying what to write."""

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
])
def test_other_layouts_are_refused_at_the_annotations_line(annotation, message):
    source = ("import pypto.language as pl\n\n"
              "@pl.jit.incore\n"
              f"def k(x: {annotation}):\n"
              "    return x\n")
    error, lines = raised_by(source, lambda ns: ns["k"].frontend(), TypeCheckError)
    assert message in str(error)
    assert annotation in lines[error.span.line - 1]
