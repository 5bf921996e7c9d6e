"""The products and arg-reductions on tensors, shared by the simulator tests
(tests/ops/test_ops_reductions.py) and the CPU-model tests
(tests/device/test_device_reductions.py); tests/ is on sys.path through its conftest.py.
The kernels take their shapes from their arguments; `edge_values` is R x C."""

from __future__ import annotations

import torch

import pypto.language as pl

R, C = 16, 32


@pl.jit
def products_and_args(x: pl.Tensor, rprod: pl.Out[pl.Tensor], cprod: pl.Out[pl.Tensor],
                      rmax: pl.Out[pl.Tensor], rmin: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        rprod[:] = pl.row_prod(x)
        rmax[:] = pl.row_argmax(x)
        rmin[:] = pl.row_argmin(x)
    with pl.at(level=pl.Level.CORE_GROUP):
        cprod[:] = pl.col_prod(x)
    return rprod, cprod, rmax, rmin


@pl.jit
def column_args(x: pl.Tensor, cmax: pl.Out[pl.Tensor], cmin: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        cmax[:] = pl.col_argmax(x)
        cmin[:] = pl.col_argmin(x)
    return cmax, cmin


def edge_values(dtype: torch.dtype) -> torch.Tensor:
    """[R, C] factors near 1 (products stay finite) with ties, NaN, infinities and signed
    zeros at fixed places; integers small, with their extremes and a wrapping row."""
    g = torch.Generator().manual_seed(64)
    if dtype.is_floating_point:
        x = (torch.rand(R, C, generator=g) * 0.4 + 0.8) * torch.where(
            torch.rand(R, C, generator=g) < 0.5, -1.0, 1.0)
        x[:, 2] = 3.0  # a column of ties
        x[1] = 2.0  # a row of ties
        x[2, 0], x[3, 5], x[4, 2] = float("nan"), float("nan"), float("nan")
        x[5, 7], x[6, 9], x[7, 4], x[7, 6] = float("inf"), float("-inf"), -0.0, 0.0
        x[8, 3], x[9, 4] = 0.0, -0.0
        return x.to(dtype)
    low = 0 if dtype in (torch.uint16, torch.uint32) else -3
    x = torch.randint(low, 4, (R, C), generator=g)
    x[:, 2] = 3
    x[1] = 2
    info = torch.iinfo(dtype)
    x[5, 7], x[6, 9], x[7] = info.max, info.min, 3  # 3 ** 32 wraps
    return x.to(dtype)


def outputs(dtype: torch.dtype) -> list[torch.Tensor]:
    """products_and_args's outputs for an R x C input of `dtype`."""
    return [torch.zeros(R, 1, dtype=dtype), torch.zeros(1, C, dtype=dtype),
            torch.zeros(R, 1, dtype=torch.int32), torch.zeros(R, 1, dtype=torch.int32)]


def column_outputs() -> list[torch.Tensor]:
    """column_args's outputs for an R x C input."""
    return [torch.zeros(1, C, dtype=torch.int32), torch.zeros(1, C, dtype=torch.int32)]


def same_bits(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Bit for bit, any NaN matching any NaN."""
    if not got.is_floating_point():
        return torch.equal(got, want)
    bits = torch.int16 if got.element_size() == 2 else torch.int32
    return torch.equal(got.isnan(), want.isnan()) and torch.equal(
        got.nan_to_num(0.5).view(bits), want.nan_to_num(0.5).view(bits))
