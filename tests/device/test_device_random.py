"""pl.tile.random in device code: TRANDOM of the tile's valid region, its key and counter in
TRandomKey / TRandomCounter arrays, proven on pto-isa's A5 CPU model against a5sim."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.debug.torch_runtime import random as reference
from pypto.ir import LoweringError
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


@pl.jit
def seeded(key: pl.Scalar[pl.INT32], a: pl.Out[pl.Tensor], b: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a = pl.store(pl.tile.random(key, 0x56789, 1, 2, 3, 4, [16, 40], dtype=pl.INT32),
                     [0, 0], a)
        b = pl.store(pl.tile.random(-1, 7, 0xFFFFFFFF, 0xFFFFFFFF, 5, 0, [4, 520],
                                    valid_shape=[3, 517], dtype=pl.INT32, rounds=7), [0, 0], b)
    return a, b


def _arguments():
    return [0x1234, torch.zeros(16, 40, dtype=torch.int32), torch.zeros(4, 520, dtype=torch.int32)]


def _source(platform: str) -> str:
    program = seeded.frontend(*_arguments())
    (fn,) = [f for f in lower(program, get_platform(platform)).functions
             if f.func_type is FunctionType.InCore]
    return device_kernel(fn).cpp


def test_random_is_trandom_of_key_and_counter_arrays():
    source = _source("a5cpu")
    assert "static_cast<uint32_t>(key), static_cast<uint32_t>(INT64_C(354185))};" in source
    assert source.count("TRandomKey ") == 2 and source.count("TRandomCounter ") == 2
    assert source.count("TRANDOM<10>(") == 1 and source.count("TRANDOM<7>(") == 1


def test_a2a3_cpu_model_refuses_it_at_its_line():
    with pytest.raises(LoweringError, match="Ascend910B does not have") as info:
        _source("a2a3cpu")
    assert "test_device_random.py" in str(info.value)


@pytest.mark.slow
def test_random_on_the_a5_cpu_model_is_the_simulators():
    a, b = outputs_agreeing_with_the_simulator(seeded, _arguments, 1, "a5cpu")
    assert torch.equal(a, reference(0x1234, 0x56789, 1, 2, 3, 4, [16, 40], dtype="INT32"))
    want = reference(-1, 7, 0xFFFFFFFF, 0xFFFFFFFF, 5, 0, [4, 520], [3, 517], "INT32", 7)
    assert torch.equal(b[:3, :517], want[:3, :517])
