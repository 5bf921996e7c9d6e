"""Batched matmul in device code: a [B, rows, cols] tile is B [rows, cols] tiles, each
loaded from and stored to its batch's window (the batch stride of the tensor), and one
TMATMUL per batch; on both pto-isa CPU models the results are the simulator's bits."""

from __future__ import annotations

import pytest
import torch
from batch_matmul_programs import (
    batch_elementwise,
    quantized,
    tensor_batch_matmul,
    tile_batch_matmul,
    tile_broadcasts,
)
from cpu_models import outputs_agreeing_with_the_simulator

from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

PLATFORMS = ["a2a3cpu", "a5cpu"]


def _tile_args() -> list[torch.Tensor]:
    return [quantized(2, 16, 32, seed=1), quantized(2, 32, 48, seed=2), torch.empty(2, 16, 48)]


def test_each_batch_is_a_window_at_the_batch_stride_and_one_tmatmul():
    program = tile_batch_matmul.frontend(*_tile_args())
    (fn,) = [f for f in lower(program, get_platform("a5cpu")).functions
             if f.func_type is FunctionType.InCore]
    cpp = device_kernel(fn).cpp
    assert ("tensor_at<half>(a, INT64_C(0), INT64_C(0)) + INT64_C(1) * batch_stride(a), {}, "
            "{row_stride(a), col_stride(a)});") in cpp
    assert ("tensor_at<float>(c, INT64_C(0), INT64_C(0)) + INT64_C(1) * batch_stride(c)"
            in cpp)
    assert cpp.count("TMATMUL(") == 2 and cpp.count("TSTORE(") == 2
    assert "TileLeft<half, 16, 32, 16, 32> a_mat_b1_0" not in cpp  # each batch its own tile
    assert cpp.count("TileLeft<half, 16, 32, 16, 32>") == 2


def _broadcast_args() -> list[torch.Tensor]:
    return [quantized(1, 16, 32, seed=3, dtype=torch.bfloat16),
            quantized(3, 32, 16, seed=4, dtype=torch.bfloat16),
            quantized(16, 32, seed=5, dtype=torch.bfloat16),
            torch.zeros(3, 16, 16), torch.zeros(2, 32, 32)]


def _tensor_args() -> list[torch.Tensor]:
    # A batch of one against three: the batch is the loop variable of a pl.range.
    return [quantized(1, 16, 32, seed=6), quantized(3, 32, 24, seed=7), torch.zeros(3, 16, 24)]


def _vec_args() -> list[torch.Tensor]:
    return [quantized(2, 16, 32, seed=8, dtype=torch.float32),
            quantized(2, 16, 32, seed=9, dtype=torch.float32),
            torch.zeros(2, 16, 32), torch.zeros(1, 16, 32)]


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a.float(), b.float())  # exact: quantized operands


# case -> (kernel, its arguments, the first output, the outputs torch computes (None: the
# simulator's bits are the reference)); the operands are exact, so any order of sums agrees.
CASES = {
    "tiles": (tile_batch_matmul, _tile_args, 2, lambda a, b, c: [_mm(a, b)]),
    "broadcast_tiles": (tile_broadcasts, _broadcast_args, 3,
                        lambda a1, b3, w, c1, c2: [_mm(a1, b3), _mm(b3[1:], w)]),
    "tensors": (tensor_batch_matmul, _tensor_args, 2, lambda a, b, c: [_mm(a, b)]),
    "vec_tiles": (batch_elementwise, _vec_args, 2,
                  lambda x, y, out, one: [torch.maximum((x + y) * 0.5, x), None]),
}


# Slow: one CPU-model build per kernel and platform.
@pytest.mark.slow
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_batched_kernels_on_the_cpu_model(case, platform):
    kernel, args, first, want = CASES[case]
    got = outputs_agreeing_with_the_simulator(kernel, args, first, platform)
    for g, w in zip(got, want(*args()), strict=True):
        assert w is None or torch.equal(g, w)
