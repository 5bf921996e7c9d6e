"""Reductions and broadcasts, on tiles and on tensors (lowered chunk by chunk)."""

from __future__ import annotations

import pytest
import torch
from reduction_programs import (
    column_args,
    column_outputs,
    edge_values,
    outputs,
    products_and_args,
    same_bits,
)

import pypto.language as pl
from pypto.debug import torch_runtime
from pypto.ir import CapacityError, TypeCheckError
from pypto.runtime import RunConfig

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py

PLATFORMS = ["a2a3sim", "a5sim"]
R, C = 16, 32

EXPAND_OPS = {
    "": lambda x, v: v.expand_as(x),
    "_add": lambda x, v: x + v,
    "_sub": lambda x, v: x - v,
    "_mul": lambda x, v: x * v,
    "_div": lambda x, v: x / v,
    "_max": torch.maximum,
    "_min": torch.minimum,
}


@pl.jit.incore
def tile_reductions(x: pl.Tensor[[R, C], pl.FP32], rows: pl.Out[pl.Tensor[[R, 3], pl.FP32]],
                    cols: pl.Out[pl.Tensor[[3, C], pl.FP32]],
                    by_row: pl.Out[pl.Tensor[[8 * R, C], pl.FP32]],
                    by_col: pl.Out[pl.Tensor[[8 * R, C], pl.FP32]]):
    t = pl.load(x, [0, 0], [R, C])
    tmp = pl.create_tile([R, C], pl.FP32)
    rs = pl.row_sum(t, tmp)
    rows = pl.store(rs, [0, 0], rows)
    rows = pl.store(pl.row_max(t, tmp), [0, 1], rows)
    rows = pl.store(pl.row_min(t, tmp), [0, 2], rows)
    cs = pl.col_max(t)
    cols = pl.store(pl.col_sum(t), [0, 0], cols)
    cols = pl.store(cs, [1, 0], cols)
    cols = pl.store(pl.col_min(t), [2, 0], cols)
    by_row = pl.store(pl.row_expand(t, rs), [0 * R, 0], by_row)
    by_row = pl.store(pl.row_expand_add(t, rs), [1 * R, 0], by_row)
    by_row = pl.store(pl.row_expand_sub(t, rs), [2 * R, 0], by_row)
    by_row = pl.store(pl.row_expand_mul(t, rs), [3 * R, 0], by_row)
    by_row = pl.store(pl.row_expand_div(t, rs), [4 * R, 0], by_row)
    by_row = pl.store(pl.row_expand_max(t, rs), [5 * R, 0], by_row)
    by_row = pl.store(pl.row_expand_min(t, rs), [6 * R, 0], by_row)
    by_row = pl.store(pl.row_expand_expdif(t, rs), [7 * R, 0], by_row)
    by_col = pl.store(pl.col_expand(t, cs), [0 * R, 0], by_col)
    by_col = pl.store(pl.col_expand_add(t, cs), [1 * R, 0], by_col)
    by_col = pl.store(pl.col_expand_sub(t, cs), [2 * R, 0], by_col)
    by_col = pl.store(pl.col_expand_mul(t, cs), [3 * R, 0], by_col)
    by_col = pl.store(pl.col_expand_div(t, cs), [4 * R, 0], by_col)
    by_col = pl.store(pl.col_expand_max(t, cs), [5 * R, 0], by_col)
    by_col = pl.store(pl.col_expand_min(t, cs), [6 * R, 0], by_col)
    by_col = pl.store(pl.col_expand_expdif(t, cs), [7 * R, 0], by_col)
    return rows, cols, by_row, by_col


def _sequential(x: torch.Tensor, dim: int) -> torch.Tensor:
    parts = x.unbind(dim)
    acc = parts[0].clone()
    for p in parts[1:]:
        acc = acc + p
    return acc


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tile_reductions_and_broadcasts_match_torch(platform):
    x = torch.randn(R, C, generator=torch.Generator().manual_seed(61))
    rows, cols = torch.empty(R, 3), torch.empty(3, C)
    by_row, by_col = torch.empty(8 * R, C), torch.empty(8 * R, C)
    tile_reductions(x, rows, cols, by_row, by_col, config=RunConfig(platform=platform))
    rs, cs = _sequential(x, 1)[:, None], x.amax(dim=0, keepdim=True)
    assert torch.equal(rows[:, :1], rs)
    assert torch.equal(rows[:, 1:2], x.amax(dim=1, keepdim=True))
    assert torch.equal(rows[:, 2:], x.amin(dim=1, keepdim=True))
    assert torch.equal(cols[:1], _sequential(x, 0)[None])
    assert torch.equal(cols[1:2], cs)
    assert torch.equal(cols[2:], x.amin(dim=0, keepdim=True))
    for i, (name, fn) in enumerate(EXPAND_OPS.items()):
        assert torch.equal(by_row[i * R:(i + 1) * R], fn(x, rs)), f"row_expand{name}"
        assert torch.equal(by_col[i * R:(i + 1) * R], fn(x, cs)), f"col_expand{name}"
    torch.testing.assert_close(by_row[7 * R:], torch.exp(x - rs), rtol=2e-7, atol=0)
    torch.testing.assert_close(by_col[7 * R:], torch.exp(x - cs), rtol=2e-7, atol=0)


@pl.jit
def tensor_rows(x: pl.Tensor[[512, 1024], pl.FP32], bias: pl.Tensor[[512, 1], pl.FP32],
                out: pl.Out[pl.Tensor[[512, 1024], pl.FP32]],
                norms: pl.Out[pl.Tensor[[512, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        sq = pl.row_sum(pl.mul(x, x))
        norms[:] = pl.sqrt(sq)
        out[:] = pl.row_expand_add(pl.row_expand_div(x, pl.sqrt(sq)), bias)
    return out, norms


@pl.jit
def tensor_cols(x: pl.Tensor[[1024, 256], pl.FP32], out: pl.Out[pl.Tensor[[1024, 256], pl.FP32]],
                peak: pl.Out[pl.Tensor[[1, 256], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        top = pl.col_max(x)
        peak[:] = top
        out[:] = pl.col_expand_sub(x, top)
    return out, peak


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensor_row_reductions_walk_whole_rows(platform):
    g = torch.Generator().manual_seed(62)
    x, bias = torch.randn(512, 1024, generator=g), torch.randn(512, 1, generator=g)
    out, norms = torch.empty(512, 1024), torch.empty(512, 1)
    tensor_rows(x, bias, out, norms, config=RunConfig(platform=platform))
    want_norms = torch.sqrt(_sequential(x * x, 1).double()).float()[:, None]  # correctly rounded
    assert torch.equal(norms, want_norms)
    assert torch.equal(out, x / want_norms + bias)
    text = tensor_rows.lower(x, bias, out, norms, config=RunConfig(platform=platform)).as_python()
    assert "for row_0 in pl.range(0, 512, " in text and ", 1024], pl.FP32" in text


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensor_column_reductions_walk_whole_columns(platform):
    x = torch.randn(1024, 256, generator=torch.Generator().manual_seed(63))
    out, peak = torch.empty(1024, 256), torch.empty(1, 256)
    tensor_cols(x, out, peak, config=RunConfig(platform=platform))
    assert torch.equal(peak, x.amax(dim=0, keepdim=True))
    assert torch.equal(out, x - peak)
    text = tensor_cols.lower(x, out, peak, config=RunConfig(platform=platform)).as_python()
    assert "for col_0 in pl.range(0, 256, " in text and "pl.Tile[[1024, " in text


@pl.jit
def rows_and_cols(x: pl.Tensor[[1024, 1024], pl.FP32], out: pl.Out[pl.Tensor[[1024, 1024],
                                                                             pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_expand_sub(pl.row_expand_sub(x, pl.row_max(x)), pl.col_max(x))
    return out


def test_row_and_column_reductions_that_do_not_fit_ask_for_tiles():
    x = torch.zeros(1024, 1024)
    with pytest.raises(CapacityError) as info:
        rows_and_cols.lower(x, x)
    message = str(info.value)
    assert "test_ops_reductions.py:" in message and "write the tile code" in message


@pl.jit.incore
def row_sum_without_tmp(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, 1], pl.FP32]]):
    t = pl.load(x, [0, 0], [R, C])
    out = pl.store(pl.row_sum(t), [0, 0], out)
    return out


def test_tile_row_sum_requires_tmp_tile_and_says_how():
    with pytest.raises(TypeCheckError) as info:
        row_sum_without_tmp.lower(torch.zeros(R, C), torch.zeros(R, 1))
    message = str(info.value)
    assert "tmp_tile" in message and "pl.create_tile([16, 32], pl.FP32)" in message


# -- products and arg-reductions (TROWPROD / TCOLPROD, TROWARGMAX ... TCOLARGMIN)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.int16])
def test_products_and_row_arg_reductions_match_torch_on_edge_values(platform, dtype):
    x = edge_values(dtype)
    rprod, cprod, rmax, rmin = outputs(dtype)
    products_and_args(x, rprod, cprod, rmax, rmin, config=RunConfig(platform=platform))
    assert same_bits(rprod, torch_runtime.row_prod(x))
    assert same_bits(cprod, torch_runtime.col_prod(x))
    assert torch.equal(rmax, torch_runtime.row_argmax(x))
    assert torch.equal(rmin, torch_runtime.row_argmin(x))
    assert rmax[1, 0] == 0 and rmin[1, 0] == 0  # a row of ties: the first index
    if dtype.is_floating_point:
        assert rmax[2, 0] == 0 and rmin[2, 0] == 0  # a NaN first is never beaten
        assert rmax[3, 0] == 2 and rmax[5, 0] == 7 and rmin[6, 0] == 9  # inside, it never wins
        assert rmax[7, 0] == 2 and torch.isnan(rprod[2, 0])
        assert rprod[8, 0] == 0 and cprod[0, 4] == 0 and cprod[0, 0].isnan()
    clean = x.double()[10:]  # rows without specials: torch's own reductions agree
    assert torch.equal(rmax[10:, 0].long(), clean.argmax(dim=1))
    if dtype == torch.float32:
        torch.testing.assert_close(rprod[10:].double(), clean.prod(dim=1, keepdim=True),
                                   rtol=1e-5, atol=0)
    if not dtype.is_floating_point:  # the integer product wraps as the dtype's
        assert rprod[7, 0] == torch.tensor(3 ** C % 2 ** (8 * x.element_size())).to(dtype)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.uint16, torch.uint32])
def test_column_arg_reductions_match_torch_on_edge_values(platform, dtype):
    x = edge_values(dtype)
    cmax, cmin = column_outputs()
    column_args(x, cmax, cmin, config=RunConfig(platform=platform))
    assert torch.equal(cmax, torch_runtime.col_argmax(x))
    assert torch.equal(cmin, torch_runtime.col_argmin(x))
    assert cmax[0, 2] == 0  # a column of ties below row 0's 3: row 0
    clean = x.long() if not dtype.is_floating_point else x.double()
    assert torch.equal(cmax[0, 10:].long(), clean[:, 10:].argmax(dim=0))


@pl.jit.incore
def partial_args(x: pl.Tensor[[R, 48], pl.FP32], amax: pl.Out[pl.Tensor[[R, 1], pl.INT32]],
                 prod: pl.Out[pl.Tensor[[R, 1], pl.FP32]],
                 cmin: pl.Out[pl.Tensor[[1, 48], pl.INT32]]):
    t = pl.load(x, [0, 0], [R, 64], valid_shape=[R, 48])
    tmp = pl.create_tile([R, 64], pl.FP32)
    amax = pl.store(pl.row_argmax(t, tmp), [0, 0], amax)
    prod = pl.store(pl.row_prod(t, tmp), [0, 0], prod)
    cmin = pl.store(pl.col_argmin(t, tmp), [0, 0], cmin)
    return amax, prod, cmin


@pytest.mark.parametrize("platform", PLATFORMS)
def test_padding_takes_part_in_products_and_arg_reductions(platform):
    x = -torch.rand(R, 48, generator=torch.Generator().manual_seed(65)) - 1.0
    amax, prod = torch.zeros(R, 1, dtype=torch.int32), torch.ones(R, 1)
    cmin = torch.zeros(1, 48, dtype=torch.int32)
    partial_args(x, amax, prod, cmin, config=RunConfig(platform=platform))
    assert (amax == 48).all()  # the first zero of the padding beats every negative value
    assert (prod == 0).all()
    assert torch.equal(cmin, x.argmin(dim=0, keepdim=True).int())
    text = partial_args.lower(x, amax, prod, cmin).as_python()
    assert "row_argmax_0: pl.Tile[[16, 1], pl.INT32, pl.Mem.Vec" in text
    assert "col_argmin_0: pl.Tile[[1, 64], pl.INT32, [1, 48], pl.Mem.Vec" in text


@pl.jit.incore
def arg_without_tmp(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[1, C], pl.INT32]]):
    t = pl.load(x, [0, 0], [R, C])
    out = pl.store(pl.col_argmax(t), [0, 0], out)
    return out


@pl.jit.incore
def bf16_product(x: pl.Tensor[[R, C], pl.BF16], out: pl.Out[pl.Tensor[[1, C], pl.BF16]]):
    t = pl.load(x, [0, 0], [R, C])
    out = pl.store(pl.col_prod(t), [0, 0], out)
    return out


@pl.jit.incore
def int_column_arg(x: pl.Tensor[[R, C], pl.INT32], out: pl.Out[pl.Tensor[[1, C], pl.INT32]]):
    t = pl.load(x, [0, 0], [R, C])
    out = pl.store(pl.col_argmin(t, pl.create_tile([R, C], pl.INT32)), [0, 0], out)
    return out


def test_tile_column_arg_reduction_requires_tmp_tile_and_says_how():
    with pytest.raises(TypeCheckError) as info:
        arg_without_tmp.lower(torch.zeros(R, C), torch.zeros(1, C, dtype=torch.int32))
    message = str(info.value)
    assert "test_ops_reductions.py:" in message
    assert "tmp_tile" in message and "pl.create_tile([16, 32], pl.FP32)" in message


@pytest.mark.parametrize("kernel, args, supported", [
    (bf16_product, (torch.zeros(R, C, dtype=torch.bfloat16),
                    torch.zeros(1, C, dtype=torch.bfloat16)), "FP16, FP32, INT16, INT32"),
    (int_column_arg, (torch.zeros(R, C, dtype=torch.int32),
                      torch.zeros(1, C, dtype=torch.int32)), "FP16, FP32, UINT16, UINT32"),
])
def test_dtypes_the_instructions_lack_are_refused_at_the_line(kernel, args, supported):
    with pytest.raises(TypeCheckError) as info:
        kernel.lower(*args)
    message = str(info.value)
    assert "test_ops_reductions.py:" in message and "does not support dtype" in message
    assert supported in message
