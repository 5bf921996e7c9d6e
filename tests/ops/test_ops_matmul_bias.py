"""The cube's bias forms: pl.tile.matmul_bias / pl.tile.gemv_bias (TMATMUL_BIAS /
TGEMV_BIAS) read a [1, N] row from pl.Mem.Bias and add it to every row of the product
after the last K step, bit for bit on both simulators; the bias table's capacity is the
backend's, and a bias anywhere else is refused at its line."""

from __future__ import annotations

import pytest
import torch
from bias_programs import bias_arguments, bias_forms
from located_errors import raised_by

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


def test_the_bias_row_is_placed_in_bias_and_round_trips_through_the_printer():
    arguments = bias_arguments(torch.float16, 16, 32, 64)
    lowered = bias_forms.lower(*arguments, config=RunConfig(platform="a2a3sim"))
    text = lowered.as_python()
    assert "row: pl.Tile[[1, 64], pl.FP32, pl.Mem.Bias, 0x0] = pl.move(" in text, text
    for program in (bias_forms.frontend(*arguments), lowered):
        printed = program.as_python()
        assert pl.parse(printed).as_python() == printed


def test_a_bias_row_over_the_bias_table_is_a_capacity_error_at_its_line():
    # 512 FP32 values are 2 KiB: over A2/A3's 1 KiB.
    with pytest.raises(CapacityError) as info:
        bias_forms.lower(*bias_arguments(torch.float16, 16, 32, 512),
                         config=RunConfig(platform="a2a3sim"))
    message = str(info.value)
    assert "does not fit the Bias buffer: 1024 bytes" in message, message
    assert "tile `row`" in message and "bias_programs.py:" in message


def test_the_bias_table_is_larger_on_ascend950():
    # The same 2 KiB row within A5's 4 KiB.
    a, b, bias, v, *outputs = bias_arguments(torch.float16, 16, 32, 512)
    bias_forms(a, b, bias, v, *outputs, config=RunConfig(platform="a5sim"))
    assert torch.equal(outputs[0], torch_runtime.tile_matmul_bias(a, b, bias))


# A kernel whose bias row is made by `{row}` (the line the error names).
_BIAS_KERNEL = """
import pypto.language as pl


@pl.jit.incore
def kernel(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, c: pl.Out[pl.Tensor]):
    x = pl.move(pl.load(a, [0, 0], a.shape, target_memory=pl.Mem.Mat), pl.Mem.Left)
    y = pl.move(pl.load(b, [0, 0], b.shape, target_memory=pl.Mem.Mat), pl.Mem.Right)
    row = {row}
    c = pl.store(pl.tile.matmul_bias(x, y, pl.tile.slice(row, [1, 32], [0, 0])), [0, 0], c)
    return c
"""
_BIAS_ERRORS = {
    "outside_the_bias_table": (
        "pl.load(bias, [0, 0], bias.shape, target_memory=pl.Mem.Mat)", 1,
        "reads `bias`", "pl.tile.matmul_bias"),
    "of_two_rows": (
        "pl.move(pl.load(bias, [0, 0], bias.shape, target_memory=pl.Mem.Mat), pl.Mem.Bias)", 2,
        "pl.move to Bias takes one row, got a [2, 32] tile", "pl.Mem.Bias"),
    "loaded_from_global_memory": (
        "pl.load(bias, [0, 0], bias.shape, target_memory=pl.Mem.Bias)", 1,
        "pl.load cannot reach Bias", "target_memory=pl.Mem.Bias"),
}


@pytest.mark.parametrize("case", list(_BIAS_ERRORS))
def test_a_bias_not_moved_into_the_bias_table_as_one_row_is_refused_at_its_line(case):
    row, rows, message, at = _BIAS_ERRORS[case]
    arguments = (torch.zeros(16, 32).half(), torch.zeros(32, 32).half(), torch.zeros(rows, 32),
                 torch.zeros(16, 32))
    error, lines = raised_by(_BIAS_KERNEL.format(row=row),
                             lambda ns: ns["kernel"].lower(*arguments), LoweringError)
    assert message in str(error), str(error)
    assert case != "outside_the_bias_table" or "from Mat, but it must be in Bias" in str(error)
    assert at in lines[error.span.line - 1]


@pytest.mark.parametrize(("bias_dtype", "shape"), [(torch.float16, (1, 32)),
                                                   (torch.float32, (1, 16))])
def test_a_bias_of_another_dtype_or_width_is_a_type_error_naming_the_row(bias_dtype, shape):
    a, b, bias, v, *outputs = bias_arguments(torch.float16, 16, 32, 32)
    with pytest.raises(TypeCheckError) as info:
        bias_forms.lower(a, b, torch.zeros(*shape, dtype=bias_dtype), v, *outputs)
    message = str(info.value)
    assert "bias must be a [1, 32] FP32 tile" in message, message
    assert "bias_programs.py:" in message
