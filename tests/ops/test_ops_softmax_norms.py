"""Softmax, RMSNorm, LayerNorm, SiLU and GELU built from primitives equal torch at 1e-5."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import pypto.language as pl
from pypto.runtime import RunConfig

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py

PLATFORMS = ["a2a3sim", "a5sim"]
TOL = {"rtol": 1e-5, "atol": 1e-5}


@pl.jit.incore
def softmax_tiles(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    t = pl.load(x, [0, 0], [64, 64])
    tmp = pl.create_tile([64, 64], pl.FP32)
    row_max = pl.row_max(t, tmp)
    e = pl.exp(pl.row_expand_sub(t, row_max))
    row_sum = pl.row_sum(e, tmp)
    out = pl.store(pl.row_expand_div(e, row_sum), [0, 0], out)
    return out


@pl.jit
def softmax_tensors(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.row_expand_expdif(x, pl.row_max(x))
        out[:] = pl.row_expand_div(e, pl.row_sum(e))
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("kernel", [softmax_tiles, softmax_tensors], ids=["tiles", "tensors"])
def test_softmax_from_primitives_equals_torch(platform, kernel):
    x = torch.randn(64, 64, generator=torch.Generator().manual_seed(1)) * 4
    out = torch.empty(64, 64)
    kernel(x, out, config=RunConfig(platform=platform))
    torch.testing.assert_close(out, torch.softmax(x, dim=-1), **TOL)


EPS = 1e-6


@pl.jit.incore
def rms_norm(x: pl.Tensor[[32, 64], pl.FP32], gamma: pl.Tensor[[1, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    t = pl.load(x, [0, 0], [32, 64])
    g = pl.load(gamma, [0, 0], [1, 64])
    tmp = pl.create_tile([32, 64], pl.FP32)
    mean_sq = pl.mul(pl.row_sum(pl.mul(t, t), tmp), 1.0 / 64)
    inv = pl.rsqrt(pl.add(mean_sq, EPS))
    out = pl.store(pl.col_expand_mul(pl.row_expand_mul(t, inv), g), [0, 0], out)
    return out


@pl.jit.incore
def layer_norm(x: pl.Tensor[[32, 64], pl.FP32], gamma: pl.Tensor[[1, 64], pl.FP32],
               beta: pl.Tensor[[1, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    t = pl.load(x, [0, 0], [32, 64])
    g = pl.load(gamma, [0, 0], [1, 64])
    b = pl.load(beta, [0, 0], [1, 64])
    tmp = pl.create_tile([32, 64], pl.FP32)
    mean = pl.mul(pl.row_sum(t, tmp), 1.0 / 64)
    centred = pl.row_expand_sub(t, mean)
    var = pl.mul(pl.row_sum(pl.mul(centred, centred), tmp), 1.0 / 64)
    normed = pl.row_expand_mul(centred, pl.rsqrt(pl.add(var, EPS)))
    out = pl.store(pl.col_expand_add(pl.col_expand_mul(normed, g), b), [0, 0], out)
    return out


def _norm_inputs():
    g = torch.Generator().manual_seed(2)
    return (torch.randn(32, 64, generator=g) * 3 + 1, torch.randn(1, 64, generator=g),
            torch.randn(1, 64, generator=g))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_rms_norm_equals_torch(platform):
    x, gamma, _ = _norm_inputs()
    out = torch.empty(32, 64)
    rms_norm(x, gamma, out, config=RunConfig(platform=platform))
    want = F.rms_norm(x, (64,), gamma[0], eps=EPS)
    torch.testing.assert_close(out, want, **TOL)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_layer_norm_equals_torch(platform):
    x, gamma, beta = _norm_inputs()
    out = torch.empty(32, 64)
    layer_norm(x, gamma, beta, out, config=RunConfig(platform=platform))
    want = F.layer_norm(x, (64,), gamma[0], beta[0], eps=EPS)
    torch.testing.assert_close(out, want, **TOL)


@pl.jit.incore
def silu_gelu(x: pl.Tensor[[32, 64], pl.FP32], silu: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
              gelu: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    t = pl.load(x, [0, 0], [32, 64])
    sigmoid = pl.recip(pl.add(pl.exp(pl.neg(t)), 1.0))
    silu = pl.store(pl.mul(t, sigmoid), [0, 0], silu)
    # GELU, tanh form: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
    # with tanh(u) = 1 - 2 / (exp(2u) + 1).
    u = pl.mul(pl.add(t, pl.mul(pl.mul(pl.mul(t, t), t), 0.044715)), math.sqrt(2.0 / math.pi))
    tanh = pl.sub(1.0, pl.div(2.0, pl.add(pl.exp(pl.mul(u, 2.0)), 1.0)))
    gelu = pl.store(pl.mul(pl.mul(t, 0.5), pl.add(tanh, 1.0)), [0, 0], gelu)
    return silu, gelu


@pytest.mark.parametrize("platform", PLATFORMS)
def test_silu_and_gelu_from_primitives_equal_torch(platform):
    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(3)) * 3
    silu, gelu = torch.empty(32, 64), torch.empty(32, 64)
    silu_gelu(x, silu, gelu, config=RunConfig(platform=platform))
    torch.testing.assert_close(silu, F.silu(x), **TOL)
    torch.testing.assert_close(gelu, F.gelu(x, approximate="tanh"), **TOL)
