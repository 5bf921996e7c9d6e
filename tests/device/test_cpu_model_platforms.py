"""The CPU-model platforms (a2a3cpu, a5cpu): their compiler and pto-isa are found as the
build rules say, and the device sources they run are the ones the device platforms compile."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from cpu_models import toolchain_or_skip

import pypto.language as pl
from pypto.compiler import CompileOptions, build_program
from pypto.platform import CompilerNotFoundError, find_compiler, get_platform
from pypto.runtime import load_artifact
from pypto.toolchain import pto_isa

STAND_IN = """#!PYTHON
import json, os, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("bisheng stand-in 0.0 (pypto test)")
    sys.exit(0)
source, output = args[args.index("-o") - 1], args[args.index("-o") + 1]
with open(LOG, "a") as log:
    log.write(json.dumps({"source": source, "text": open(source).read()}) + "\\n")
with open(output, "wb") as out:
    out.write(b"stand-in object")
"""

# A small [20, 50] program: the row-width hint is expected.
pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


@pl.jit
def scaled_add(a: pl.Tensor, b: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.add(a, b), s)
    return out


def _program():
    return scaled_add.frontend(torch.zeros(20, 50), torch.zeros(20, 50), 0.5,
                               torch.zeros(20, 50))


def test_a_compiler_older_than_the_minimum_is_passed_over(monkeypatch, tmp_path):
    gcc12 = tmp_path / "bin" / "g++"
    gcc12.parent.mkdir()
    gcc12.write_text("#!/bin/sh\necho 'g++ (Debian 12.2.0-14) 12.2.0'\n")
    gcc12.chmod(0o755)
    monkeypatch.setenv("PATH", str(gcc12.parent))
    monkeypatch.delenv("PYPTO_CPU_MODEL_CXX", raising=False)
    monkeypatch.setattr("pypto.platform._python_module_compiler", lambda module: None)
    with pytest.raises(CompilerNotFoundError) as info:
        find_compiler(get_platform("a5cpu"))
    message = str(info.value)
    assert f"{gcc12} (gcc 12 is older than 13)" in message
    assert "pip install 'pypto[cpu-model]'" in message
    assert "the Python package 'ziglang' (not installed)" in message


def test_an_explicit_compiler_that_is_too_old_is_an_error_not_a_fallback(monkeypatch, tmp_path):
    old = tmp_path / "clang++-15"
    old.write_text("#!/bin/sh\necho 'clang version 15.0.7'\n")
    old.chmod(0o755)
    monkeypatch.setenv("PYPTO_CPU_MODEL_CXX", str(old))
    with pytest.raises(CompilerNotFoundError, match=r"clang 15 is older than 17"):
        find_compiler(get_platform("a2a3cpu"))


def test_ziglang_runs_as_zig_cpp_when_no_compiler_on_path_is_recent_enough(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("PYPTO_CPU_MODEL_CXX", raising=False)
    try:
        found = find_compiler(get_platform("a5cpu"))
    except CompilerNotFoundError:
        pytest.skip("the ziglang extra is not installed")
    assert found.path.name == "zig" and found.args == ("c++",)


def test_pto_isa_root_wins_and_a_wrong_one_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PTO_ISA_ROOT", str(tmp_path))
    with pytest.raises(pto_isa.PtoIsaNotFoundError, match="PTO_ISA_ROOT=.*holds no include"):
        pto_isa.pto_isa_root()
    (tmp_path / "include" / "pto").mkdir(parents=True)
    (tmp_path / "include" / "pto" / "pto-inst.hpp").write_text("")
    assert pto_isa.pto_isa_root() == tmp_path


def test_without_pto_isa_the_error_names_the_variable_and_the_snapshot(monkeypatch, tmp_path):
    monkeypatch.delenv("PTO_ISA_ROOT", raising=False)
    monkeypatch.setattr(pto_isa, "SNAPSHOT", tmp_path / "no-snapshot")
    with pytest.raises(pto_isa.PtoIsaNotFoundError) as info:
        pto_isa.pto_isa_root()
    assert "$PTO_ISA_ROOT is unset" in str(info.value)
    assert str(tmp_path / "no-snapshot") in str(info.value)


# Slow: a CPU-model kernel compiles in ~5-10 s (the first zig c++ builds libc++: ~2 min).
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_a_kernel_runs_on_the_cpu_model_and_matches_torch(platform):
    toolchain_or_skip(platform)
    artifact = build_program(_program(), CompileOptions(platform=platform))
    manifest = json.loads((artifact / "manifest.json").read_text())
    assert manifest["platform"] == platform
    assert (artifact / "kernels" / "scaled_add_incore_0.launch.cpp").is_file()
    a, b = torch.randn(20, 50), torch.randn(20, 50)
    out = torch.empty(20, 50)
    load_artifact(artifact).run([a, b, 0.5, out])
    assert torch.equal(out, (a + b) * 0.5)


@pytest.mark.slow
def test_the_device_compiler_receives_exactly_the_source_the_cpu_model_ran(
        monkeypatch, tmp_path):
    toolchain_or_skip("a5cpu")
    log = tmp_path / "calls.log"
    bisheng = tmp_path / "bisheng"
    bisheng.write_text(STAND_IN.replace("PYTHON", sys.executable).replace("LOG", repr(str(log))))
    bisheng.chmod(0o755)
    monkeypatch.setenv("PYPTO_DEVICE_CXX", str(bisheng))
    cpu = build_program(_program(), CompileOptions(platform="a5cpu"))
    device = build_program(_program(), CompileOptions(platform="a5"))
    ran = (cpu / "kernels" / "scaled_add_incore_0.cpp").read_text()
    compiled = [json.loads(line) for line in log.read_text().splitlines()]
    kernels = [c for c in compiled if c["source"] != "orchestration.cpp"]
    assert [c["source"] for c in kernels] == ["scaled_add_incore_0.cpp"]
    assert kernels[0]["text"] == ran
    assert (device / "kernels" / "scaled_add_incore_0.cpp").read_text() == ran
    assert "TADD(" in ran and "TMULS(" in ran and "kernel_entry(__gm__ int64_t *args)" in ran
    assert not (Path(device) / "kernels" / "scaled_add_incore_0.launch.cpp").exists()
