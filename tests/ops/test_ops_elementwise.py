"""Elementwise operators, their scalar forms, compare/select and bitwise ops equal torch.

One kernel per dtype computes the whole catalogue into the rows of one output, so each
platform compiles it once.
"""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py

PLATFORMS = ["a2a3sim", "a5sim"]
R, C = 8, 64

FLOAT_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "exp": lambda a, b: torch.exp(a),
    "log": lambda a, b: torch.log(b),
    # Correctly rounded references: torch's CPU sqrt may be off by an ulp.
    "sqrt": lambda a, b: torch.sqrt(b.double()).float(),
    "rsqrt": lambda a, b: 1.0 / torch.sqrt(b.double()).float(),
    "recip": lambda a, b: 1.0 / b,
    "neg": lambda a, b: -a,
    "abs": lambda a, b: torch.abs(a),
    "relu": lambda a, b: torch.relu(a),
    "adds": lambda a, b: a + 1.5,
    "rsubs": lambda a, b: 1.5 - a,
    "muls": lambda a, b: a * 3.0,
    "rdivs": lambda a, b: 2.0 / b,
    "maxs": lambda a, b: torch.clamp(a, min=0.25),
    "sel_lt": lambda a, b: torch.where(a < b, a, b),
    "sel_ges": lambda a, b: torch.where(a >= 0.0, a, b),
    "expands": lambda a, b: torch.full_like(a, -2.5),
    "full": lambda a, b: torch.full_like(a, 0.75),
}


@pl.jit.incore
def float_catalogue(a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
                    out: pl.Out[pl.Tensor[[23 * R, C], pl.FP32]]):
    x = pl.load(a, [0, 0], [R, C])
    y = pl.load(b, [0, 0], [R, C])
    out = pl.store(pl.add(x, y), [0 * R, 0], out)
    out = pl.store(pl.sub(x, y), [1 * R, 0], out)
    out = pl.store(pl.mul(x, y), [2 * R, 0], out)
    out = pl.store(pl.div(x, y), [3 * R, 0], out)
    out = pl.store(pl.maximum(x, y), [4 * R, 0], out)
    out = pl.store(pl.minimum(x, y), [5 * R, 0], out)
    out = pl.store(pl.exp(x), [6 * R, 0], out)
    out = pl.store(pl.log(y), [7 * R, 0], out)
    out = pl.store(pl.sqrt(y), [8 * R, 0], out)
    out = pl.store(pl.rsqrt(y), [9 * R, 0], out)
    out = pl.store(pl.recip(y), [10 * R, 0], out)
    out = pl.store(pl.neg(x), [11 * R, 0], out)
    out = pl.store(pl.abs(x), [12 * R, 0], out)
    out = pl.store(pl.relu(x), [13 * R, 0], out)
    out = pl.store(x + 1.5, [14 * R, 0], out)
    out = pl.store(1.5 - x, [15 * R, 0], out)
    out = pl.store(pl.mul(x, 3.0), [16 * R, 0], out)
    out = pl.store(pl.div(2.0, y), [17 * R, 0], out)
    out = pl.store(pl.maximum(x, 0.25), [18 * R, 0], out)
    out = pl.store(pl.sel(pl.cmp(x, y, cmp_type=2), x, y), [19 * R, 0], out)
    out = pl.store(pl.sel(pl.cmp(0.0, x, cmp_type=3), x, y), [20 * R, 0], out)
    out = pl.store(pl.expands(x, -2.5), [21 * R, 0], out)
    out = pl.store(pl.full([R, C], pl.FP32, 0.75), [22 * R, 0], out)
    return out


def _float_inputs():
    g = torch.Generator().manual_seed(11)
    a = torch.randn(R, C, generator=g)
    b = torch.rand(R, C, generator=g) + 0.1
    a[0, :4] = torch.tensor([0.0, -0.0, 1e-30, -3.0])
    return a, b


@pytest.mark.parametrize("platform", PLATFORMS)
def test_float_catalogue_matches_torch(platform):
    a, b = _float_inputs()
    out = torch.empty(len(FLOAT_OPS) * R, C)
    float_catalogue(a, b, out, config=RunConfig(platform=platform))
    for i, (name, fn) in enumerate(FLOAT_OPS.items()):
        got, want = out[i * R:(i + 1) * R], fn(a, b)
        # libm and torch's vectorised exp / log may differ in the last bit.
        tol = 2e-7 if name in ("exp", "log") else 0.0
        torch.testing.assert_close(got, want, rtol=tol, atol=tol, msg=name)


@pl.jit.incore
def half_chain(a: pl.Tensor[[R, C], pl.FP16], b: pl.Tensor[[R, C], pl.FP16],
               out: pl.Out[pl.Tensor[[R, C], pl.FP16]]):
    x = pl.load(a, [0, 0], [R, C])
    y = pl.load(b, [0, 0], [R, C])
    out = pl.store(pl.div(pl.mul(pl.add(x, y), y), 3.0), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fp16_tiles_round_after_every_op(platform):
    g = torch.Generator().manual_seed(12)
    a = torch.randn(R, C, generator=g).half()
    b = torch.randn(R, C, generator=g).half()
    out = torch.empty(R, C, dtype=torch.float16)
    half_chain(a, b, out, config=RunConfig(platform=platform))
    stepwise = ((a + b) * b) / 3.0  # torch rounds each half op too
    assert torch.equal(out.view(torch.int16), stepwise.view(torch.int16))
    fused = ((a.float() + b.float()) * b.float() / 3.0).half()
    assert not torch.equal(out, fused)


INT_OPS = {
    "and_": lambda a, b: a & b,
    "or_": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "not_": lambda a, b: ~a,
    "shl": lambda a, b: a << (b & 7),
    "shr": lambda a, b: a >> (b & 7),
    "ands": lambda a, b: a & 0xFF,
    "shls": lambda a, b: a << 3,
    "shrs": lambda a, b: a >> 2,
    "add": lambda a, b: a + b,
    "div": lambda a, b: torch.where(b == 0, 0, torch.div(a, torch.where(b == 0, 1, b),
                                                          rounding_mode="trunc")),
    "abs": lambda a, b: torch.abs(a),
    "max": torch.maximum,
    "cmp_eq": lambda a, b: (a == (b & 3)).to(torch.int32),
}


@pl.jit.incore
def int_catalogue(a: pl.Tensor[[R, C], pl.INT32], b: pl.Tensor[[R, C], pl.INT32],
                  out: pl.Out[pl.Tensor[[14 * R, C], pl.INT32]]):
    x = pl.load(a, [0, 0], [R, C])
    y = pl.load(b, [0, 0], [R, C])
    n = pl.and_(y, 7)
    out = pl.store(pl.and_(x, y), [0 * R, 0], out)
    out = pl.store(pl.or_(x, y), [1 * R, 0], out)
    out = pl.store(pl.xor(x, y), [2 * R, 0], out)
    out = pl.store(pl.not_(x), [3 * R, 0], out)
    out = pl.store(pl.shl(x, n), [4 * R, 0], out)
    out = pl.store(pl.shr(x, n), [5 * R, 0], out)
    out = pl.store(pl.and_(x, 255), [6 * R, 0], out)
    out = pl.store(pl.shl(x, 3), [7 * R, 0], out)
    out = pl.store(pl.shr(x, 2), [8 * R, 0], out)
    out = pl.store(pl.add(x, y), [9 * R, 0], out)
    out = pl.store(pl.div(x, y), [10 * R, 0], out)
    out = pl.store(pl.abs(x), [11 * R, 0], out)
    out = pl.store(pl.maximum(x, y), [12 * R, 0], out)
    mask = pl.cmp(x, pl.and_(y, 3), cmp_type=0)
    out = pl.store(pl.sel(mask, pl.full([R, C], pl.INT32, 1), pl.full([R, C], pl.INT32, 0)),
                   [13 * R, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int32_catalogue_matches_torch(platform):
    g = torch.Generator().manual_seed(13)
    a = torch.randint(-2**31, 2**31 - 1, (R, C), generator=g, dtype=torch.int32)
    b = torch.randint(-50, 50, (R, C), generator=g, dtype=torch.int32)
    a[0, :8] = torch.tensor([0, 1, 2, 3, -1, -4, 2**31 - 1, -2**31], dtype=torch.int32)
    b[0, :8] = torch.tensor([3, 0, 1, 2, 3, 0, 1, -1], dtype=torch.int32)
    out = torch.empty(len(INT_OPS) * R, C, dtype=torch.int32)
    int_catalogue(a, b, out, config=RunConfig(platform=platform))
    for i, (name, fn) in enumerate(INT_OPS.items()):
        want = fn(a.long(), b.long()).to(torch.int64) & 0xFFFFFFFF  # wrap to 32 bits
        got = out[i * R:(i + 1) * R].long() & 0xFFFFFFFF
        assert torch.equal(got, want), name


def test_shift_counts_outside_the_width_give_zero_or_the_sign():
    """The shift semantics the registry documents, checked on the simulator."""
    a = torch.tensor([[5, -5, 7, -7] * 16] * R, dtype=torch.int32)
    b = torch.tensor([[32, 33, -1, 40] * 16] * R, dtype=torch.int32)
    out = torch.empty(R, C, dtype=torch.int32)
    shift_pair(a, b, out, config=RunConfig(platform="a2a3sim"))
    assert out[0, :4].tolist() == [0, -1, 0, -1]


@pl.jit.incore
def shift_pair(a: pl.Tensor[[R, C], pl.INT32], b: pl.Tensor[[R, C], pl.INT32],
               out: pl.Out[pl.Tensor[[R, C], pl.INT32]]):
    x = pl.load(a, [0, 0], [R, C])
    y = pl.load(b, [0, 0], [R, C])
    out = pl.store(pl.shr(x, y), [0, 0], out)
    return out


@pl.jit
def tensor_level_mix(a: pl.Tensor[[256, 512], pl.FP32], b: pl.Tensor[[256, 512], pl.FP32],
                     out: pl.Out[pl.Tensor[[256, 512], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        mask = pl.cmp(a, b, cmp_type=4)
        out[:] = pl.sel(mask, pl.relu(a), pl.minimum(pl.expands(a, 0.5), b))
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensor_level_compare_select_and_expands(platform):
    g = torch.Generator().manual_seed(14)
    a, b = torch.randn(256, 512, generator=g), torch.randn(256, 512, generator=g)
    out = torch.empty(256, 512)
    tensor_level_mix(a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out, torch.where(a > b, torch.relu(a), torch.clamp(b, max=0.5)))


@pl.jit.incore
def runtime_scalars(x: pl.Tensor[[R, C], pl.FP16], s: pl.Scalar[pl.FP32], k: pl.Scalar[pl.INT64],
                    out: pl.Out[pl.Tensor[[R, C], pl.FP16]]):
    t = pl.load(x, [0, 0], [R, C])
    out = pl.store(pl.add(pl.maximum(s, pl.mul(t, s)), k), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_runtime_scalars_are_rounded_to_the_tile_dtype_first(platform):
    x = torch.randn(R, C, generator=torch.Generator().manual_seed(15)).half()
    out = torch.empty(R, C, dtype=torch.float16)
    runtime_scalars(x, 0.1, 3, out, config=RunConfig(platform=platform))
    s = torch.tensor(0.1).half()  # 0.1 held as FP16, as the hardware's register does
    assert torch.equal(out, torch.maximum(x * s, s) + 3)
