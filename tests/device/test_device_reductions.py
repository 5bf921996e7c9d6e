"""pl.row_prod / pl.col_prod and the arg-reductions in device code: TROWPROD, TCOLPROD,
TROWARGMAX / TROWARGMIN / TCOLARGMAX / TCOLARGMIN (one instruction each, with the tmp
tile), proven on pto-isa's CPU model against the simulators on the values where orders
and comparisons part (ties, NaN, infinities, signed zeros, integer wrap-around)."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator
from reduction_programs import (
    column_args,
    column_outputs,
    edge_values,
    outputs,
    products_and_args,
    same_bits,
)

from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.debug import torch_runtime
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


def test_each_reduction_is_one_instruction_with_its_tmp_tile():
    x = edge_values(torch.float32)
    program = products_and_args.frontend(x, *outputs(torch.float32))
    program_cols = column_args.frontend(x, *column_outputs())
    source = "".join(device_kernel(f).cpp for p in (program, program_cols)
                     for f in lower(p, get_platform("a2a3cpu")).functions
                     if f.func_type is FunctionType.InCore)
    for call in ("TROWPROD(", "TROWARGMAX(", "TROWARGMIN(", "TCOLARGMAX(", "TCOLARGMIN("):
        assert source.count(call) == 1 and source.split(call)[1].split(")")[0].count(",") == 2
    assert source.count("TCOLPROD(") == 1


# Slow: a CPU-model build and a simulator build per platform and dtype.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.int16])
def test_products_and_row_arg_reductions_on_the_cpu_model_are_the_simulators(platform, dtype):
    rprod, cprod, rmax, rmin = outputs_agreeing_with_the_simulator(
        products_and_args, lambda: [edge_values(dtype), *outputs(dtype)], 1, platform)
    x = edge_values(dtype)
    assert same_bits(rprod, torch_runtime.row_prod(x))
    assert same_bits(cprod, torch_runtime.col_prod(x))
    assert torch.equal(rmax, torch_runtime.row_argmax(x))
    assert torch.equal(rmin, torch_runtime.row_argmin(x))
    assert rmax[1, 0] == 0  # a row of ties keeps the first
    if dtype.is_floating_point:
        assert rmax[2, 0] == 0 and rmin[2, 0] == 0  # a NaN first is never beaten


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.uint16, torch.uint32])
def test_column_arg_reductions_on_the_cpu_model_are_the_simulators(platform, dtype):
    cmax, cmin = outputs_agreeing_with_the_simulator(
        column_args, lambda: [edge_values(dtype), *column_outputs()], 1, platform)
    x = edge_values(dtype)
    assert torch.equal(cmax, torch_runtime.col_argmax(x))
    assert torch.equal(cmin, torch_runtime.col_argmin(x))
    assert cmax[0, 2] == 0  # a column of ties keeps row 0
