"""Element reads `t[i, j]` (`pl.read`): one element of a tile or tensor as a scalar."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import pypto.language as pl
from pypto.debug import load_entry, torch_codegen
from pypto.ir import LoweringError, TypeCheckError
from pypto.ir.types import ScalarType
from pypto.runtime import RunConfig
from pypto.runtime.errors import KernelError

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py

PLATFORMS = ["a2a3sim", "a5sim"]
HERE = Path(__file__).read_text().splitlines()


def line_of(marker: str) -> int:
    """The line of this file that ends with `# <marker>`."""
    lines = [i for i, text in enumerate(HERE, 1) if f"# {marker}" in text]
    assert len(lines) == 1, marker
    return lines[0]


@pl.jit.incore
def scale_by_elements(x: pl.Tensor[[16, 32], pl.FP16], n: pl.Tensor[[8, 8], pl.INT32],
                      out: pl.Out[pl.Tensor[[16, 32], pl.FP16]]):
    t = pl.load(x, [0, 0], [16, 32])
    k = pl.load(n, [0, 0], [8, 8])
    acc = pl.mul(t, t[0, 3])  # a constant index
    for i in pl.range(k[1, 2]):  # an integer element bounds a loop
        acc = pl.add(acc, t[i, i + 1] + t[2, 0])  # index expressions, scalar arithmetic
    out = pl.store(acc, [0, 0], out)
    return out


def _scale_by_elements_expected(x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """By hand: FP16 rounding after every tile op, scalars rounded to FP16 once."""
    acc = (x.float() * x[0, 3].float()).half()
    for i in range(int(n[1, 2])):
        s = float(np.float16(float(x[i, i + 1]) + float(x[2, 0])))  # rounded once
        acc = (acc.float() + s).half()
    return acc


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tile_element_reads_agree_with_torch_codegen_and_by_hand(platform):
    g = torch.Generator().manual_seed(71)
    x = torch.randn(16, 32, generator=g).half()
    n = torch.zeros(8, 8, dtype=torch.int32)
    n[1, 2] = 5
    out = torch.zeros(16, 32).half()
    config = RunConfig(platform=platform)
    scale_by_elements(x, n, out, config=config)
    program = scale_by_elements.lower(x, n, out, config=config)
    reference = torch.zeros(16, 32).half()
    load_entry(torch_codegen(program, check_shapes=True), program.entry)(x, n, reference)
    assert torch.equal(out, reference)
    assert torch.equal(out, _scale_by_elements_expected(x, n))


@pl.jit
def tensor_elements(a: pl.Tensor[[16, 64], pl.FP32], b: pl.Tensor[[16, 64], pl.FP32],
                    out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = a[3, 5]
        out[:] = pl.sub(pl.mul(b, s), a[15, 63])
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensor_element_reads_inside_pl_at_agree_with_torch_codegen_and_by_hand(platform):
    g = torch.Generator().manual_seed(72)
    a, b = torch.randn(16, 64, generator=g), torch.randn(16, 64, generator=g)
    out = torch.zeros(16, 64)
    config = RunConfig(platform=platform)
    tensor_elements(a, b, out, config=config)
    program = tensor_elements.lower(a, b, out, config=config)
    reference = torch.zeros(16, 64)
    load_entry(torch_codegen(program, check_shapes=True), program.entry)(a, b, reference)
    assert torch.equal(out, reference)
    assert torch.equal(out, b * a[3, 5] - a[15, 63])


def test_an_element_read_is_a_scalar_of_the_element_dtype():
    program = scale_by_elements.frontend(torch.zeros(16, 32).half(),
                                         torch.zeros(8, 8, dtype=torch.int32),
                                         torch.zeros(16, 32).half())
    text = program.as_python()
    assert "pl.read(t, [0, 3])" in text
    assert "pl.read(k, [1, 2])" in text
    reads = [s for s in program.functions[0].body
             if getattr(getattr(s, "value", None), "op", None) == "read"]
    assert reads == []  # nested in the operands: t[0, 3] is an operand of pl.mul
    mul = program.functions[0].body[2].value
    assert mul.args[1].type == ScalarType(pl.FP16)


def test_element_reads_round_trip_through_the_printer():
    for kernel, args in (
        (scale_by_elements, (torch.zeros(16, 32).half(), torch.zeros(8, 8, dtype=torch.int32),
                             torch.zeros(16, 32).half())),
        (tensor_elements, (torch.zeros(16, 64), torch.zeros(16, 64), torch.zeros(16, 64))),
    ):
        for program in (kernel.frontend(*args), kernel.lower(*args)):
            text = program.as_python()
            assert pl.parse(text).as_python() == text


@pl.jit.incore
def out_of_range(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 32])
    t = pl.mul(t, t[2, 32])  # error: column out of range
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit.incore
def negative_index(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 32])
    t = pl.add(t, t[-1, 0])  # error: negative index
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit.incore
def float_loop_bound(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 32])
    for _i in pl.range(t[0, 0]):  # error: float bound
        t = pl.add(t, 1.0)
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit.incore
def missing_index(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 32])
    t = pl.add(t, t[1])  # error: one index
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit.incore
def float_index(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 32])
    t = pl.add(t, t[0, t[0, 1]])  # error: float index
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def outside_pl_at(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(x, 1.0)
    s = out[0, 0]  # error: outside pl.at
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(x, s)
    return out


@pl.jit
def input_element(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    s = x[0, 3]  # the control plane reads an input tensor's element
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(x, s)
    return out


def test_an_orchestration_reads_elements_of_its_input_tensors():
    x, out = torch.randn(16, 32), torch.zeros(16, 32)
    input_element(x, out)
    assert torch.equal(out, x + x[0, 3])


def test_an_orchestration_read_of_a_tensor_a_task_writes_is_refused_at_its_line():
    with pytest.raises(LoweringError, match="a task writes: the read could race") as info:
        outside_pl_at.compile(torch.zeros(16, 32), torch.zeros(16, 32))
    assert info.value.span.file == __file__
    assert info.value.span.line == line_of("error: outside pl.at")


@pytest.mark.parametrize("kernel, marker, cls, fragment", [
    (out_of_range, "error: column out of range", TypeCheckError,
     "index [2, 32] is outside the tile [16, 32]"),
    (negative_index, "error: negative index", TypeCheckError,
     "index [-1, 0] is outside the tile [16, 32]"),
    (float_loop_bound, "error: float bound", TypeCheckError, "loop bounds are integers"),
    (missing_index, "error: one index", Exception, "gives 1 of the 2 indices"),
    (float_index, "error: float index", TypeCheckError, "indices must be integers"),
])
def test_element_read_errors_name_the_users_line(kernel, marker, cls, fragment):
    with pytest.raises(cls) as info:
        kernel.frontend(torch.zeros(16, 32), torch.zeros(16, 32))
    err = info.value
    assert fragment in str(err), str(err)
    assert err.span.file == __file__ and err.span.line == line_of(marker), str(err)


@pl.jit.incore
def runtime_index(x: pl.Tensor[[16, 32], pl.FP32], k: pl.Scalar[pl.INT64],
                  out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 32])
    t = pl.add(t, t[k, 0])
    out = pl.store(t, [0, 0], out)
    return out


def test_a_runtime_index_outside_the_tile_is_a_fault_of_the_sim_debug_build(monkeypatch):
    monkeypatch.setenv("PYPTO_SIM_DEBUG", "1")
    x = torch.randn(16, 32)
    with pytest.raises(KernelError, match=r"tgetval of element \[40, 0\] lies outside the "
                                          r"\[16, 32\] tile"):
        runtime_index(x, 40, torch.zeros(16, 32), config=RunConfig(platform="a2a3sim"))
    out = torch.zeros(16, 32)
    runtime_index(x, 7, out, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(out, x + x[7, 0])


@pl.jit
def computed_tensor(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y = pl.add(a, 1.0)
        out[:] = pl.mul(a, y[0, 0])  # error: computed tensor
    return out


def test_reading_an_element_of_a_computed_tensor_is_an_error_at_the_users_line():
    with pytest.raises(LoweringError) as info:
        computed_tensor.lower(torch.zeros(16, 64), torch.zeros(16, 64))
    assert "`y` is a tensor computed in the kernel" in str(info.value)
    assert info.value.span.line == line_of("error: computed tensor")
