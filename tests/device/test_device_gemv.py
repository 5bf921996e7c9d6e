"""pl.tile.gemv / pl.tile.gemv_acc in device code: TGEMV / TGEMV_ACC of a one-row Left tile,
proven on pto-isa's CPU model against the simulators (and the M = 1 matmul)."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator
from gemv_programs import gemv_arguments, gemv_forms

from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


def test_gemv_and_gemv_acc_are_tgemv_and_tgemv_acc():
    program = gemv_forms.frontend(*gemv_arguments(torch.float16, 64, 32))
    (fn,) = [f for f in lower(program, get_platform("a2a3cpu")).functions
             if f.func_type is FunctionType.InCore]
    source = device_kernel(fn).cpp
    assert source.count("TGEMV(") == 1 and source.count("TGEMV_ACC(") == 1
    assert source.count("TMATMUL(") == 1


# Slow: a CPU-model build and a simulator build per platform and dtype.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int8])
def test_gemv_on_the_cpu_model_is_the_simulators(platform, dtype):
    once, twice, product = outputs_agreeing_with_the_simulator(
        gemv_forms, lambda: gemv_arguments(dtype, 96, 48), 2, platform)
    assert torch.equal(once, product) and not torch.equal(twice, once)
