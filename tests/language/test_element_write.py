"""`pl.write(t, [i, j], value)`: one element of a tensor or a tile set to a scalar.

Upstream's element access (`pl.read` / `pl.write`).  A statement of its own that rebinds
`t`, as a bare `pl.store` does; written as a [1, 1] window filled with the value (rounded
once to t's dtype): `pl.store(pl.tile.full(...))` in a kernel, `pl.assemble(t,
pl.full(...))` in a pl.at block, `pl.tile.assemble` into a tile.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.compiler import lower
from pypto.ir import LoweringError, ParseError, TypeCheckError
from pypto.platform import get_platform
from pypto.runtime import RunConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "device"))
from cpu_models import outputs_agreeing_with_the_simulator  # noqa: E402
from located_errors import entry_error  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

R, C = 16, 128


@pl.jit.incore
def from_an_index_tensor(x: pl.Tensor[[R, C], pl.FP32], idx: pl.Tensor[[2, 8], pl.INT32],
                         out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    t = pl.load(x, [0, 0], [R, C])
    out = pl.store(t, [0, 0], out)
    for i in pl.range(2):
        pl.write(out, [i, 3], pl.read(idx, [i, 1]))  # INT32 -> FP32, exactly
    return out


@pl.jit
def in_a_block(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(x, 1.0)
        pl.write(out, [2, 4], pl.read(x, [5, 7]))
    return out


@pl.jit.incore
def into_a_tile(x: pl.Tensor[[R, C], pl.FP16], out: pl.Out[pl.Tensor[[R, C], pl.FP16]]):
    t = pl.load(x, [0, 0], [R, C])
    pl.write(t, [1, 2], 0.1)  # rounded once to FP16
    out = pl.store(t, [0, 0], out)
    return out


def _index_args():
    x = torch.randn(R, C, generator=torch.Generator().manual_seed(0))
    return [x, torch.arange(16, dtype=torch.int32).reshape(2, 8), torch.zeros(R, C)]


def _expected_index(x, idx):
    e = x.clone()
    e[0, 3], e[1, 3] = float(idx[0, 1]), float(idx[1, 1])
    return e


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_kernel_writes_elements_of_its_output_tensor(platform):
    x, idx, out = _index_args()
    from_an_index_tensor(x, idx, out, config=RunConfig(platform=platform))
    assert torch.equal(out, _expected_index(x, idx))


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_block_writes_an_element_after_the_whole_tensor(platform):
    x, out = torch.randn(R, C), torch.zeros(R, C)
    in_a_block(x, out, config=RunConfig(platform=platform))
    expected = x + 1.0
    expected[2, 4] = x[5, 7]
    assert torch.equal(out, expected)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_an_element_of_a_tile_is_set_rounded_to_its_dtype(platform):
    x, out = torch.randn(R, C, dtype=torch.float16), torch.zeros(R, C, dtype=torch.float16)
    into_a_tile(x, out, config=RunConfig(platform=platform))
    expected = x.clone()
    expected[1, 2] = torch.tensor(0.1).half()
    assert torch.equal(out, expected)


def test_the_statement_prints_as_the_write_it_means_and_parses_back():
    for program in (into_a_tile.frontend(torch.zeros(R, C, dtype=torch.float16),
                                         torch.zeros(R, C, dtype=torch.float16)),
                    in_a_block.frontend(torch.zeros(R, C), torch.zeros(R, C))):
        text = program.as_python()
        assert "pl.tile.assemble(t, pl.full([1, 1], pl.FP16, 0.1), [1, 2])" in text or \
            "pl.assemble(out, pl.tensor.full([1, 1], pl.FP32, " in text
        assert pl.parse(text) == program


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_tensor_element_writes_on_the_cpu_model_are_the_simulators(platform):
    (out,) = outputs_agreeing_with_the_simulator(from_an_index_tensor, _index_args, 2, platform)
    x, idx, _ = _index_args()
    assert torch.equal(out, _expected_index(x, idx))


def test_a_tile_element_write_is_refused_in_device_code_at_its_line():
    from pypto.codegen.device import device_kernel

    program = into_a_tile.frontend(torch.zeros(R, C, dtype=torch.float16),
                                   torch.zeros(R, C, dtype=torch.float16))
    (fn,) = [f for f in lower(program, get_platform("a2a3cpu")).functions
             if f.func_type.name == "InCore"]
    with pytest.raises(LoweringError) as info:
        device_kernel(fn)
    assert "test_element_write.py" in str(info.value)


@pytest.mark.parametrize("body, message", [
    ("    pl.write(out, [0, 0], 1.0)", "runs on the device: inside a `pl.at` block"),
    ("    with pl.at(level=pl.Level.CORE_GROUP):\n        y = pl.write(out, [0, 0], 1.0)",
     "is a statement of its own"),
    ("    with pl.at(level=pl.Level.CORE_GROUP):\n        pl.write(out, [0], 1.0)",
     "needs 2 indices, got 1"),
    ("    with pl.at(level=pl.Level.CORE_GROUP):\n        pl.write(out, [0, 0], x)",
     "writes a scalar value"),
    ("    with pl.at(level=pl.Level.CORE_GROUP):\n        pl.write(out, [0, 0])",
     "takes (t, [i, j], value)"),
])
def test_a_wrong_write_is_refused_at_its_line(body, message):
    error, lines = entry_error(body, (ParseError, TypeCheckError))
    assert message in str(error)
    assert "pl.write" in lines[error.span.line - 1]
