"""exp, log and sqrt of the torch runtime are the simulator's: the float64 functions of
pypto.golden.fp64 (the simulator's fmath.hpp, tests/sim) and sqrt, rounded once to FP32,
whatever kernel torch's or numpy's CPU dispatch would have picked."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pypto.debug import torch_runtime as rt
from pypto.golden import fp64

OPS = [("exp", fp64.exp), ("log", fp64.log), ("sqrt", np.sqrt)]


def _values() -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    spread = torch.randn(64, 64, generator=g) * 8
    special = torch.tensor([0.0, -0.0, 1.0, -1.0, 88.7, 89.0, -104.0, float("inf"),
                            float("-inf"), float("nan"), 1e-45, 552.80536])
    return torch.cat([spread.reshape(-1), special])


@pytest.mark.parametrize("name, ufunc", OPS)
def test_fp32_results_are_the_fp64_results_rounded_once(name, ufunc):
    x = _values()
    with np.errstate(all="ignore"):
        want = torch.from_numpy(ufunc(x.double().numpy()).astype(np.float32))
    torch.testing.assert_close(getattr(rt, name)(x), want, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("name, ufunc", OPS)
def test_narrow_tiles_round_the_fp32_result_once_more(name, ufunc):
    x = _values().abs().half()
    want = getattr(rt, name)(x.float()).half()
    torch.testing.assert_close(getattr(rt, name)(x), want, rtol=0, atol=0, equal_nan=True)


def test_expdif_is_exp_of_the_fp32_difference():
    x, v = _values()[:4096].reshape(64, 64), torch.linspace(-3, 3, 64).reshape(64, 1)
    torch.testing.assert_close(rt.row_expand_expdif(x, v), rt.exp(x - v), rtol=0, atol=0)


@pytest.mark.parametrize("name, ufunc", OPS)
def test_torchs_own_kernels_are_not_used(name, ufunc, monkeypatch):
    """ATen sends contiguous float exp/log/sqrt to MKL VML; a process's first call, split
    over intra-op threads, can run one thread's chunk through a low-accuracy kernel
    (oneMKL 2024.2, pytorch/pytorch#188792).  That made the softmax of
    test_torch_runtime_coverage.py disagree with the simulator about 1 run in 12."""
    x = _values()
    expected = getattr(rt, name)(x)

    def refuse(t, *args, **kwargs):
        raise AssertionError(f"torch.{name} was called")

    monkeypatch.setattr(torch, name, refuse)
    monkeypatch.setattr(torch.Tensor, name, refuse)
    torch.testing.assert_close(getattr(rt, name)(x), expected, rtol=0, atol=0, equal_nan=True)
