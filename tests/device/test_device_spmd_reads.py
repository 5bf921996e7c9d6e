"""What upstream's SPMD paged attention (models/09_paged_attention_spmd) needs of device
code beyond the other kernels: an element read of a rank-1 tensor (`pl.tensor.read(lens,
[b])`, a [1] tile loaded from the window [0, b] of the tensor's one row) and the SPMD block
count (`pl.tile.get_block_num()`, the AI Core's `get_block_num()`; on pto-isa's CPU model,
whose `get_block_num()` is one count for the whole process, the launcher's count of the
task); proven on pto-isa's CPU model against the simulators."""

from __future__ import annotations

import pytest
import torch
from cpu_models import toolchain_or_skip

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir import LoweringError
from pypto.ir.types import FunctionType
from pypto.platform import get_platform
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

BLOCKS, ROWS = 3, 8


@pl.jit.incore
def strided(lens: pl.Tensor[[ROWS], pl.INT32], x: pl.Tensor[[ROWS * 16, 64], pl.FP32],
            out: pl.Out[pl.Tensor[[ROWS * 16, 64], pl.FP32]]):
    # Upstream's stride partitioning: block i takes rows i, i + n, ...
    for b in pl.range(pl.tile.get_block_idx(), ROWS, pl.tile.get_block_num()):
        n = pl.tensor.read(lens, [b])
        t = pl.load(x, [b * 16, 0], [16, 64])
        k = pl.cast(n * 100 + pl.tile.get_block_num() * 10 + pl.tile.get_block_idx(), pl.FP32)
        out = pl.store(pl.add(t, k), [b * 16, 0], out)
    return out


@pl.jit
def spmd(lens: pl.Tensor[[ROWS], pl.INT32], x: pl.Tensor[[ROWS * 16, 64], pl.FP32],
         out: pl.Out[pl.Tensor[[ROWS * 16, 64], pl.FP32]]):
    with pl.spmd(BLOCKS):
        out = strided(lens, x, out)
    return out


def _arguments():
    g = torch.Generator().manual_seed(9)
    return [torch.randint(0, 9, (ROWS,), generator=g, dtype=torch.int32),
            torch.randn(ROWS * 16, 64, generator=g), torch.zeros(ROWS * 16, 64)]


def _source(jit_fn, args) -> str:
    (fn,) = [f for f in lower(jit_fn.frontend(*args), get_platform("a2a3cpu")).functions
             if f.func_type is FunctionType.InCore]
    return device_kernel(fn).cpp


def test_an_element_read_of_a_rank_1_tensor_loads_the_window_of_its_row():
    lines = [ln.strip() for ln in _source(strided, _arguments()).splitlines()]
    window = next(i for i, ln in enumerate(lines) if ln.startswith("GlobalTensor<int32_t"))
    assert lines[window].startswith("GlobalTensor<int32_t, Shape<1, 1, 1, 1, 1>,")
    assert lines[window + 1].startswith("tensor_at<int32_t>(lens, INT64_C(0), b)")
    assert "static_cast<int64_t>(get_block_num())" in " ".join(lines)
    assert "core->" not in " ".join(lines)  # the simulators' form, not the device's


def test_a_load_of_a_rank_1_tensor_into_more_than_one_row_is_refused_at_its_line():
    @pl.jit.incore
    def column(v: pl.Tensor[[16], pl.FP32], out: pl.Out[pl.Tensor[[16], pl.FP32]]):
        out = pl.store(pl.add(pl.load(v, [0], [16]), 1.0), [0], out)
        return out

    with pytest.raises(LoweringError, match=r"rank-1 ones; `v` is rank 1") as info:
        _source(column, [torch.zeros(16), torch.zeros(16)])
    assert "test_device_spmd_reads.py" in str(info.value)


def _by_hand(lens, x):
    out = x.clone()
    for b in range(ROWS):
        out[b * 16:(b + 1) * 16] += float(int(lens[b]) * 100 + BLOCKS * 10 + b % BLOCKS)
    return out


# Slow: a CPU-model build and a simulator build per platform.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_spmd_blocks_reading_a_rank_1_tensor_on_the_cpu_model_are_the_simulators(platform):
    toolchain_or_skip(platform)
    results = []
    for target in (platform, platform.replace("cpu", "sim")):
        lens, x, out = _arguments()
        spmd(lens, x, out, config=RunConfig(platform=target))
        results.append(out)
    lens, x, _ = _arguments()
    assert torch.equal(results[0], results[1])
    assert torch.equal(results[0], _by_hand(lens, x))
