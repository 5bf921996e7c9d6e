"""A golden mismatch on a program whose result can depend on the order its tasks run in
(atomic adds, or tasks no dependency orders) says so and names `pypto triage`; one whose
tasks have a single order does not."""

from __future__ import annotations

import pytest
import torch
from split_k_programs import K, M, N, split_k

import pypto.language as pl
from pypto.runtime import GoldenMismatchError, RunConfig, write_golden

pytestmark = pytest.mark.small_tiles  # split_k_programs: 16 x 16 tiles; see tests/conftest.py


@pl.jit
def two_halves(x: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="top"):
        out[0:16, :] = pl.add(x[0:16, :], 1.0)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="bottom"):
        out[16:32, :] = pl.add(x[16:32, :], 1.0)
    return out


@pl.jit
def one_task(x: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(x, 1.0)
    return out


def _mismatch(kernel, inputs: dict, out: torch.Tensor, wrong: torch.Tensor, golden) -> str:
    write_golden(golden, inputs, {"out" if "x" in inputs else "c": wrong})
    with pytest.raises(GoldenMismatchError) as info:
        kernel(*inputs.values(), out, config=RunConfig(golden_data_dir=golden))
    return str(info.value)


def test_a_mismatch_of_atomic_adds_says_it_may_be_scheduling_and_names_triage(engine, tmp_path):
    a, b = torch.ones(M, K, dtype=torch.float16), torch.ones(K, N, dtype=torch.float16)
    message = _mismatch(split_k, {"a": a, "b": b}, torch.zeros(M, N),
                        torch.full((M, N), K + 1.0), tmp_path / "golden")
    assert "may be scheduling: kernel `add_part` accumulates with atomic adds" in message
    assert f"pypto triage FILE.py:KERNEL --golden {tmp_path / 'golden'}" in message


def test_a_mismatch_of_unordered_tasks_says_they_can_run_in_several_orders(engine, tmp_path):
    x = torch.randn(32, 128)
    message = _mismatch(two_halves, {"x": x}, torch.zeros(32, 128), x + 2, tmp_path / "golden")
    assert "may be scheduling: its 2 tasks can run in more than one order" in message
    assert "pypto triage" in message


def test_a_mismatch_of_a_single_task_says_nothing_about_scheduling(engine, tmp_path):
    x = torch.randn(32, 128)
    message = _mismatch(one_task, {"x": x}, torch.zeros(32, 128), x + 2, tmp_path / "golden")
    assert "out:" in message and "scheduling" not in message and "triage" not in message
