"""A program's names become C++ identifiers: kernels, parameters, tiles, scalars and loop
variables named after C++ keywords, the generated code's own names or C library functions
build and run on every platform, and ordinary names stay as the program wrote them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.codegen.cpp import generate
from pypto.codegen.identifiers import ident, symbol
from pypto.compiler import lower
from pypto.ir.visitor import defs
from pypto.platform import get_platform

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "device"))
from cpu_models import toolchain_or_skip  # noqa: E402

N = [16, 128]


@pl.program
class Reserved:
    """Kernels `double` and `exp` (a C library function of the CPU models' headers), an
    orchestration `main`, parameters `int`, `new`,
    `args` and `PtoTensor`, tiles `this`, `half` and `pypto_view`, a scalar `INT64_C` and a
    loop variable `core`: C++ keywords, names of the generated code, of pto-isa's element
    types and of the C library."""

    @pl.function(type=pl.FunctionType.InCore)
    def double(self, int: pl.Tensor[N, pl.FP32],
               new: pl.Out[pl.Tensor[N, pl.FP32]]) -> pl.Tensor[N, pl.FP32]:
        this = pl.load(int, [0, 0], N)
        pypto_view = pl.add(this, this)
        new = pl.store(pypto_view, [0, 0], new)
        return new

    @pl.function(type=pl.FunctionType.InCore)
    def exp(self, args: pl.Tensor[N, pl.FP32],
            PtoTensor: pl.Out[pl.Tensor[N, pl.FP32]]) -> pl.Tensor[N, pl.FP32]:
        for core in pl.range(2):
            INT64_C = core * 8
            this = pl.load(args, [INT64_C, 0], [8, 128])
            half = pl.cast(this, pl.FP16)  # an FP16 tile named after pto-isa's FP16 type
            PtoTensor = pl.store(pl.cast(pl.mul(half, half), pl.FP32), [INT64_C, 0],
                                 PtoTensor)
        return PtoTensor

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, int: pl.Tensor[N, pl.FP32], new: pl.Out[pl.Tensor[N, pl.FP32]],
             api: pl.Out[pl.Tensor[N, pl.FP32]]) -> pl.Tensor[N, pl.FP32]:
        new = self.double(int, new)
        api = self.exp(new, api)
        return api


def _run(platform: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x = torch.randn(16, 128, generator=torch.Generator().manual_seed(16))
    doubled, out = torch.zeros(16, 128), torch.zeros(16, 128)
    ir.compile(Reserved, platform=platform)(x, doubled, out)
    return x, doubled, out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_names_of_cpp_keywords_and_generated_code_build_and_run_on_the_simulators(platform):
    x, doubled, out = _run(platform)
    assert torch.equal(doubled, x + x)
    twice = (x + x).half()
    assert torch.equal(out, (twice * twice).float())


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_names_of_cpp_keywords_and_generated_code_build_and_run_on_the_cpu_models(platform):
    toolchain_or_skip(platform)
    _, doubled_sim, out_sim = _run(platform.replace("cpu", "sim"))
    _, doubled, out = _run(platform)
    assert torch.equal(doubled, doubled_sim) and torch.equal(out, out_sim)


def test_a_kernel_is_exported_under_its_identifier():
    kernels = generate(lower(Reserved, get_platform("a2a3sim"))).kernels
    assert [k.name for k in kernels] == ["double_", "exp"]
    assert 'extern "C" void double_(PtoCore *core' in kernels[0].cpp
    assert "const PtoTensor &int_ = args[0].tensor;" in kernels[0].cpp


def test_ordinary_names_are_their_own_identifiers():
    for name in ("tile_a", "x", "out_", "row_max", "acc", "i", "scale", "Tile_x", "exp"):
        assert ident(name) == name
    assert symbol("tile_a") == "tile_a"


@pytest.mark.parametrize("name", ["double", "new", "main", "args", "core", "pto", "int64_t",
                                  "pypto_view", "PtoTensor", "PTO_IN", "TADD", "INT64_C",
                                  "kernel_entry", "row_stride", "a__b", "_Upper", "half",
                                  "bfloat16_t"])
def test_a_reserved_name_takes_a_suffix(name):
    assert ident(name) == name + "_"


def test_a_kernel_named_after_a_c_library_function_takes_a_suffix():
    """Where its platform's headers declare the function: the simulators' <string.h>,
    or the C and C++ libraries pto-isa's device sources include."""
    assert [symbol(n) for n in ("memcpy", "strlen", "exp")] == ["memcpy_", "strlen_", "exp"]
    assert [symbol(n, device_code=True) for n in ("exp", "index", "write")] == \
        ["exp_", "index_", "write_"]
    assert ident("memcpy") == "memcpy"  # a local of that name shadows the function harmlessly


def test_the_mapping_is_one_to_one():
    names = [base + "_" * k for base in ("int", "x", "main", "a__b", "exp", "pypto_k", "TADD")
             for k in range(4)]
    for spell in (ident, symbol, lambda n: symbol(n, device_code=True)):
        spelled = [spell(n) for n in names]
        assert len(set(spelled)) == len(names)
        # and clear of the names codegen makes up beside the user's (`x__1`)
        assert not any("__" in s and s[-1].isdigit() for s in spelled)


def test_the_shipped_library_keeps_every_name():
    """Its generated sources stay byte-identical: no name of its programs takes a suffix."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kernels"))
    from shipped_library import shipped_specs, spec_modules

    platform = get_platform("a2a3sim")
    for module in spec_modules():
        for kernel in shipped_specs(module):
            for variant in kernel.variants:
                program = lower(kernel.program(variant), platform)
                for fn in program.functions:
                    assert symbol(fn.name) == fn.name  # (on the simulators)
                    names = [p.var.name for p in fn.params] + list(defs(fn.body))
                    assert [n for n in names if ident(n) != n] == []
