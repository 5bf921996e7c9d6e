"""INT32 -> FP16 lowers to one cast on A2/A3 and to a two-hop chain through FP32 on A5
(docs/precision-workflow.md runs the chain bit for bit against a one-step reference)."""

from __future__ import annotations

import re

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

ROWS, COLS = 16, 128

# `.lower()` reports the compiler's diagnostics; the FP16 rows are narrower than A2/A3's
# efficient width, which is beside the point here.
pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


@pl.jit
def to_fp16(x: pl.Tensor[[ROWS, COLS], pl.INT32], out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.FP16)
    return out


def _casts(platform: str) -> list[str]:
    x = torch.zeros(ROWS, COLS, dtype=torch.int32)
    out = torch.zeros(ROWS, COLS, dtype=torch.float16)
    text = to_fp16.lower(x, out, config=RunConfig(platform=platform)).as_python()
    return re.findall(r"pl\.cast\(\w+, (pl\.\w+)\)", text)


def test_a2a3_lowers_int32_to_fp16_as_one_cast():
    assert _casts("a2a3sim") == ["pl.FP16"]


def test_a5_lowers_int32_to_fp16_through_fp32():
    assert _casts("a5sim") == ["pl.FP32", "pl.FP16"]
