"""pl.reinterpret_view programs the simulator and the CPU-model tests share."""

from __future__ import annotations

import torch

import pypto.language as pl


@pl.jit
def bit_views(x: pl.Tensor, y: pl.Tensor, h: pl.Tensor, b: pl.Tensor,
              as_int: pl.Out[pl.Tensor], as_half: pl.Out[pl.Tensor],
              as_bf16: pl.Out[pl.Tensor], as_uint8: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        as_int = pl.store(pl.reinterpret_view(pl.load(x, [0, 0], [16, 32]), pl.INT32),
                          [0, 0], as_int)
        as_half = pl.store(pl.reinterpret_view(pl.load(y, [0, 0], [16, 16]), pl.FP16,
                                               shape=[8, 64]), [0, 0], as_half)
        as_bf16 = pl.store(pl.tile.reinterpret_view(pl.load(h, [0, 0], [16, 32]), pl.BF16),
                           [0, 0], as_bf16)
        as_uint8 = pl.store(pl.reinterpret_view(pl.load(b, [0, 0], [16, 32]), pl.UINT8),
                            [0, 0], as_uint8)
    return as_int, as_half, as_bf16, as_uint8


def bit_view_arguments() -> list[torch.Tensor]:
    """Inputs whose bits matter (a NaN with a payload, -0.0, infinities, a subnormal, the
    integer extremes) and the four outputs."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(16, 32, generator=g)
    x[0, :6] = torch.tensor([-0.0, float("inf"), float("-inf"), 1e-45, 3.0, -2.5])
    x.view(torch.int32)[0, 6] = 0x7FC12345  # a NaN with a payload
    y = torch.randint(-2**31, 2**31 - 1, (16, 16), generator=g, dtype=torch.int32)
    y[0, :2] = torch.tensor([-2**31, 2**31 - 1])
    h = torch.randn(16, 32, generator=g).half()
    b = torch.randint(-128, 128, (16, 32), generator=g, dtype=torch.int8)
    return [x, y, h, b, torch.empty(16, 32, dtype=torch.int32),
            torch.empty(8, 64, dtype=torch.float16), torch.empty(16, 32, dtype=torch.bfloat16),
            torch.empty(16, 32, dtype=torch.uint8)]


def expected_bit_views(x, y, h, b) -> list[torch.Tensor]:
    return [x.view(torch.int32), y.view(torch.float16).reshape(8, 64),
            h.view(torch.bfloat16), b.view(torch.uint8)]
