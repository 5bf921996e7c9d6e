"""A three-task program with tagged tensors, and runs that dump into a per-test work dir."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig
from pypto.runtime.dump import ArgsDump

R, C = 16, 128


@pl.jit
def three_tasks(x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
                acc: pl.InOut[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="first"):
        a = pl.add(x, 1.0)
    pl.dump_tag(a)  # task 1 and task 2 take `a`: both dump it at level 1
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="second", dumps=[y]):
        b = pl.mul(a, y)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="third"):
        acc[:] = pl.add(acc, pl.sub(b, a))
    return acc


def inputs():
    g = torch.Generator().manual_seed(5)
    return torch.randn(R, C, generator=g), torch.randn(R, C, generator=g), torch.randn(
        R, C, generator=g)


@pytest.fixture
def tensors():
    """Every tensor of `three_tasks` by name: what the dumps must hold (`acc` before and
    after the task that updates it)."""
    x, y, acc = inputs()
    a = x + 1.0
    b = a * y
    return {"x": x, "y": y, "acc": acc, "a": a, "b": b, "acc_after": acc + (b - a)}


@pytest.fixture
def frontend():
    """The parsed program of `three_tasks` (before any pass)."""
    return three_tasks.frontend(*inputs())


@pytest.fixture
def work_dir(tmp_path, monkeypatch):
    """`<tmp>/` as PYPTO_WORK_DIR: every run's dfx_outputs/ lands there."""
    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def dumped(work_dir):
    """dumped(level, **config) → the ArgsDump of one run of `three_tasks`."""

    def run(level: int, **config) -> ArgsDump:
        x, y, acc = inputs()
        three_tasks(x, y, acc, config=RunConfig(enable_dump_args=level, **config))
        return ArgsDump.load(work_dir / "dfx_outputs" / "args_dump")

    return run
