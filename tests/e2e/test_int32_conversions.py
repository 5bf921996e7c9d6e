"""Every int32 in [-2^17, 2^17] and the boundary table convert bit-exactly, as torch does."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py

COLS = 128
BOUNDARY = (
    list(range(2047, 2053)) + list(range(4095, 4101)) + list(range(65503, 65522))
    + [65535, 65536, (1 << 24) - 1, 1 << 24, (1 << 24) + 1]
)
VALUES = sorted(
    set(range(-(1 << 17), (1 << 17) + 1)) | set(BOUNDARY) | {-v for v in BOUNDARY}
    | {-(1 << 31), (1 << 31) - 1}
)
ROWS = -(-len(VALUES) // COLS)


def _grid() -> torch.Tensor:
    flat = torch.zeros(ROWS * COLS, dtype=torch.int32)
    flat[: len(VALUES)] = torch.tensor(VALUES, dtype=torch.int32)
    return flat.view(ROWS, COLS)


@pl.jit
def int32_to_fp16(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.FP16)
    return out


@pl.jit
def int32_to_bf16(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.BF16)
    return out


KERNELS = {torch.float16: int32_to_fp16, torch.bfloat16: int32_to_bf16}


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_int32_converts_like_torch(platform, dtype):
    x = _grid()
    out = torch.empty(ROWS, COLS, dtype=dtype)
    KERNELS[dtype](x, out, config=RunConfig(platform=platform))
    expected = x.to(dtype)
    mismatch = (out.view(torch.int16) != expected.view(torch.int16)).nonzero()
    assert mismatch.numel() == 0, [
        (int(x[r, c]), float(out[r, c]), float(expected[r, c])) for r, c in mismatch[:5].tolist()
    ]
