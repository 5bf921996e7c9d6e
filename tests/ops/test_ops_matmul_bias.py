"""The cube's bias forms: pl.tile.matmul_bias / pl.tile.gemv_bias (TMATMUL_BIAS /
TGEMV_BIAS) read a [1, N] row from pl.Mem.Bias and add it to every row of the product
after the last K step, bit for bit on both simulators; the bias table's capacity is the
backend's, and a bias anywhere else is refused at its line."""

from __future__ import annotations

import pytest
import torch
from bias_programs import bias_arguments, bias_forms

import pypto.language as pl
from pypto.debug import torch_runtime
from pypto.ir import CapacityError, LoweringError, TypeCheckError
from pypto.runtime import RunConfig

pytestmark = [pytest.mark.small_tiles,  # values on small tiles: see tests/conftest.py
              pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")]

PLATFORMS = ["a2a3sim", "a5sim"]


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The bit patterns of an FP32 / INT32 tensor (NaNs compare by their bits)."""
    return t.view(torch.int32)


def _wrapped(x: torch.Tensor) -> torch.Tensor:
    """An exact INT64 sum wrapped to INT32 (torch's narrowing keeps the low 32 bits)."""
    return x.to(torch.int32)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int8])
def test_bias_forms_are_the_product_plus_the_bias_row_bit_for_bit(platform, dtype):
    a, b, bias, v, with_bias, gemv, product = bias_arguments(dtype, 32, 48, 64)
    bias_forms(a, b, bias, v, with_bias, gemv, product, config=RunConfig(platform=platform))
    assert torch.equal(with_bias, torch_runtime.tile_matmul_bias(a, b, bias))
    assert torch.equal(gemv, torch_runtime.tile_gemv_bias(v, b, bias))
    if dtype == torch.int8:  # the sum and the bias add wrap in INT32
        assert torch.equal(with_bias, _wrapped(a.long() @ b.long() + bias.long()))
        assert torch.equal(gemv, _wrapped(v.long() @ b.long() + bias.long()))
        assert torch.equal(with_bias, _wrapped(product.long() + bias.long()))
    else:  # the product as pl.matmul forms it, then one FP32 add
        assert torch.equal(with_bias, product + bias)
        torch.testing.assert_close(with_bias, a.float() @ b.float() + bias,
                                   rtol=1e-5, atol=1e-4)


def test_int8_sums_that_pass_int32_max_wrap():
    a, b, bias, v, *outputs = bias_arguments(torch.int8, 16, 32, 32)
    a.fill_(127), b.fill_(127), v.fill_(127)
    bias.fill_(2**31 - 1)  # 32 * 127 * 127 more overflows
    bias_forms(a, b, bias, v, *outputs, config=RunConfig(platform="a2a3sim"))
    want = torch.full((16, 32), -(2**31) + 32 * 127 * 127 - 1, dtype=torch.int32)
    assert torch.equal(outputs[0], want) and torch.equal(outputs[1], want[:1])


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_the_bias_is_added_after_the_last_k_step_not_as_the_initial_sum(platform, dtype):
    # Row 0 sums 1 + (-1) = 0 exactly, then adds 2**-30: 2**-30.  Starting the sum from
    # the bias would give (2**-30 + 1) - 1 = 0 (2**-30 is lost against 1 in FP32).
    a, b, bias, v, *outputs = bias_arguments(dtype, 16, 32, 32)
    a.zero_(), b.zero_(), v.zero_()
    a[0, 0], a[0, 1], v[0, 0], v[0, 1] = 1, 1, 1, 1
    b[0, :], b[1, :] = 1, -1
    bias.fill_(2.0**-30)
    bias_forms(a, b, bias, v, *outputs, config=RunConfig(platform=platform))
    with_bias, gemv, _ = outputs
    assert torch.equal(with_bias[0], bias[0]) and torch.equal(gemv, bias)
    bias_first = torch_runtime.matmul_acc(bias.expand(16, 32).contiguous(), a, b)
    assert torch.equal(bias_first[0], torch.zeros(32))  # the order the ISA does not use


@pytest.mark.parametrize("platform", PLATFORMS)
def test_special_bias_values_add_as_ieee_fp32(platform):
    a, b, bias, v, *outputs = bias_arguments(torch.float16, 16, 32, 32)
    a.zero_(), v.zero_()  # every product sums to +0.0
    specials = torch.tensor([float("inf"), float("-inf"), float("nan"), -0.0, 0.0,
                             3.4028234663852886e38, -1.0e-45, 1.0])
    bias[0, :8] = specials
    bias_forms(a, b, bias, v, *outputs, config=RunConfig(platform=platform))
    with_bias, gemv, _ = outputs
    want = torch.zeros(1, 32) + bias  # +0.0 + -0.0 is +0.0; NaN stays NaN
    assert torch.equal(_bits(with_bias[:1]), _bits(want)) and torch.equal(_bits(gemv),
                                                                          _bits(want))
    assert torch.equal(_bits(with_bias), _bits(torch_runtime.tile_matmul_bias(a, b, bias)))


# -- placement, capacity and located errors

@pl.jit.incore
def wide_bias(a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 512], pl.FP16],
              bias: pl.Tensor[[1, 512], pl.FP32], c: pl.Out[pl.Tensor[[16, 512], pl.FP32]]):
    x = pl.move(pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat), pl.Mem.Left)
    y = pl.move(pl.load(b, [0, 0], [32, 512], target_memory=pl.Mem.Mat), pl.Mem.Right)
    row = pl.move(pl.load(bias, [0, 0], [1, 512], target_memory=pl.Mem.Mat), pl.Mem.Bias)
    c = pl.store(pl.tile.matmul_bias(x, y, row), [0, 0], c)
    return c


def _wide_arguments():
    return (torch.zeros(16, 32).half(), torch.zeros(32, 512).half(), torch.zeros(1, 512),
            torch.zeros(16, 512))


def test_a_bias_row_over_the_bias_table_is_a_capacity_error_at_its_line():
    with pytest.raises(CapacityError) as info:
        wide_bias.lower(*_wide_arguments(), config=RunConfig(platform="a2a3sim"))
    message = str(info.value)
    assert "does not fit the Bias buffer: 1024 bytes" in message, message
    assert "tile `row`" in message and "test_ops_matmul_bias.py:" in message


def test_the_bias_table_is_larger_on_ascend950():
    # 512 FP32 values are 2 KiB: over A2/A3's 1 KiB, within A5's 4 KiB.
    c = torch.zeros(16, 512)
    args = (*_wide_arguments()[:3], c)
    args[2][0] = torch.arange(512.0)
    wide_bias(*args, config=RunConfig(platform="a5sim"))
    assert torch.equal(c, args[2].expand(16, 512))


@pl.jit.incore
def bias_from_mat(a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
                  bias: pl.Tensor[[1, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    x = pl.move(pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat), pl.Mem.Left)
    y = pl.move(pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat), pl.Mem.Right)
    row = pl.load(bias, [0, 0], [1, 32], target_memory=pl.Mem.Mat)
    c = pl.store(pl.tile.matmul_bias(x, y, row), [0, 0], c)
    return c


@pl.jit.incore
def bias_of_two_rows(a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
                     bias: pl.Tensor[[2, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    x = pl.move(pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat), pl.Mem.Left)
    y = pl.move(pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat), pl.Mem.Right)
    rows = pl.move(pl.load(bias, [0, 0], [2, 32], target_memory=pl.Mem.Mat), pl.Mem.Bias)
    c = pl.store(pl.tile.matmul_bias(x, y, pl.tile.slice(rows, [1, 32], [0, 0])), [0, 0], c)
    return c


@pl.jit.incore
def bias_into_bias(bias: pl.Tensor[[1, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    row = pl.load(bias, [0, 0], [1, 32], target_memory=pl.Mem.Bias)
    c = pl.store(pl.move(row, pl.Mem.Vec), [0, 0], c)
    return c


def _h(*shape):
    return torch.zeros(*shape, dtype=torch.float16)


def test_a_bias_outside_the_bias_table_is_refused_naming_pl_move():
    with pytest.raises(LoweringError) as info:
        bias_from_mat.lower(_h(16, 32), _h(32, 32), torch.zeros(1, 32), torch.zeros(16, 32))
    message = str(info.value)
    assert "reads `bias` (row) from Mat, but it must be in Bias" in message, message
    assert "pl.move(t, pl.Mem.Bias)" in message and "test_ops_matmul_bias.py:" in message


def test_a_bias_tile_of_two_rows_is_refused_at_the_move():
    with pytest.raises(LoweringError) as info:
        bias_of_two_rows.lower(_h(16, 32), _h(32, 32), torch.zeros(2, 32), torch.zeros(16, 32))
    message = str(info.value)
    assert "pl.move to Bias takes one row" in message and "[2, 32]" in message, message
    assert "test_ops_matmul_bias.py:" in message


def test_global_memory_does_not_reach_the_bias_table():
    with pytest.raises(LoweringError) as info:
        bias_into_bias.lower(torch.zeros(1, 32), torch.zeros(16, 32))
    assert "pl.load cannot reach Bias" in str(info.value)


@pytest.mark.parametrize(("bias_dtype", "shape"), [(torch.float16, (1, 32)),
                                                   (torch.float32, (1, 16))])
def test_a_bias_of_another_dtype_or_width_is_a_type_error_naming_the_row(bias_dtype, shape):
    a, b, bias, v, *outputs = bias_arguments(torch.float16, 16, 32, 32)
    with pytest.raises(TypeCheckError) as info:
        bias_forms.lower(a, b, torch.zeros(*shape, dtype=bias_dtype), v, *outputs)
    message = str(info.value)
    assert "bias must be a [1, 32] FP32 tile" in message, message
    assert "bias_programs.py:" in message
