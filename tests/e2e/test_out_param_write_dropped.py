"""`out = expr` on an output only rebinds the name: a warning at compile time, NaN at run time."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.ir import PyptoWarning
from pypto.runtime import RunConfig

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py


@pl.jit
def dropped(a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[32, 64], pl.FP32],
            out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.add(a, b)  # the line the warning must name
    return out


DROPPED_LINE = dropped.fn.__code__.co_firstlineno + 4


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_dropped_write_warns_and_leaves_poison(platform):
    a, b = torch.ones(32, 64), torch.ones(32, 64)
    out = torch.zeros(32, 64)
    with pytest.warns(PyptoWarning, match="OutParamWriteDropped") as record:
        dropped(a, b, out, config=RunConfig(platform=platform))
    assert any(w.lineno == DROPPED_LINE and w.filename == __file__ for w in record)
    assert torch.isnan(out).all()


def test_silenced_by_disabled_diagnostics(recwarn):
    from pypto.ir import DiagnosticCheck

    a, b = torch.ones(32, 64), torch.ones(32, 64)
    cfg = RunConfig(disabled_diagnostics={DiagnosticCheck.OutParamWriteDropped})
    dropped(a, b, torch.zeros(32, 64), config=cfg)
    assert not [w for w in recwarn if "OutParamWriteDropped" in str(w.message)]
