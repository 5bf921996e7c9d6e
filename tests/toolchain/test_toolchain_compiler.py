"""Locating a platform's compiler, its identity, and how compile failures surface."""

import shutil
import stat
from pathlib import Path

import pytest

from pypto.platform import _version_line, get_platform
from pypto.sim import INCLUDE_DIR
from pypto.toolchain import CompileError, Toolchain, ToolchainNotFoundError, run_step

DEVICE_COMPILER_VARS = ("PYPTO_DEVICE_CXX", "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")


@pytest.fixture
def no_device_compiler(tmp_path, monkeypatch):
    """An environment where no CANN compiler can be found, whatever the host has."""
    for var in DEVICE_COMPILER_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))


def test_sim_toolchain_resolves_the_host_compiler(monkeypatch):
    monkeypatch.delenv("PYPTO_CXX", raising=False)
    toolchain = Toolchain.for_platform(get_platform("a2a3sim"))
    assert toolchain.compiler == Path(shutil.which("g++"))
    assert toolchain.binary_suffix == ".so"


def test_pypto_cxx_overrides_the_host_compiler(monkeypatch):
    gxx = shutil.which("g++")
    monkeypatch.setenv("PYPTO_CXX", gxx)
    assert str(Toolchain.for_platform(get_platform("a5sim")).compiler) == gxx


def test_pypto_cxx_naming_nothing_is_an_error_not_a_fallback(monkeypatch):
    monkeypatch.setenv("PYPTO_CXX", "no-such-compiler-xyz")
    with pytest.raises(ToolchainNotFoundError, match="PYPTO_CXX='no-such-compiler-xyz'"):
        Toolchain.for_platform(get_platform("a2a3sim"))


@pytest.mark.parametrize(("device", "sim"), [("a2a3", "a2a3sim"), ("a5", "a5sim")])
def test_missing_device_compiler_names_what_it_looked_at_and_the_sim(
    no_device_compiler, device, sim
):
    with pytest.raises(ToolchainNotFoundError) as info:
        Toolchain.for_platform(get_platform(device))
    message = str(info.value)
    for looked_at in (*DEVICE_COMPILER_VARS, "'bisheng' on PATH", "CANN"):
        assert looked_at in message
    assert f"platform={sim!r}" in message


def test_missing_device_compiler_lists_paths_under_an_install_root(
    no_device_compiler, tmp_path, monkeypatch
):
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "cann"))
    with pytest.raises(ToolchainNotFoundError) as info:
        Toolchain.for_platform(get_platform("a2a3"))
    assert str(tmp_path / "cann" / "compiler/ccec_compiler/bin/bisheng") in str(info.value)


def test_identity_is_version_line_plus_all_flags(monkeypatch):
    monkeypatch.delenv("PYPTO_CXX", raising=False)
    toolchain = Toolchain.for_platform(get_platform("a2a3sim"))
    version, flags = toolchain.identity().split("\n", 1)
    assert version == toolchain.version() and "g++" in version
    assert '"-ffp-contract=off"' in flags and '"orchestration"' in flags


def test_version_is_asked_once_per_compiler(monkeypatch):
    monkeypatch.delenv("PYPTO_CXX", raising=False)
    toolchain = Toolchain.for_platform(get_platform("a2a3sim"))
    toolchain.identity()
    hits = _version_line.cache_info().hits
    toolchain.identity()
    Toolchain.for_platform(get_platform("a5sim")).identity()
    assert _version_line.cache_info().hits == hits + 2


def test_unknown_core_type_is_rejected():
    toolchain = Toolchain(get_platform("a2a3sim"), Path(shutil.which("g++")))
    with pytest.raises(ValueError, match="'tensor'"):
        toolchain.flags("tensor")


def compile_shared(toolchain, source, binary, include_dirs):
    """Runs the steps that build `binary` from `source` (beside it)."""
    for step in toolchain.steps([source.name], binary.name, include_dirs):
        run_step(step, source.parent)


def test_compile_error_carries_stderr_and_source(tmp_path, monkeypatch):
    monkeypatch.delenv("PYPTO_CXX", raising=False)
    toolchain = Toolchain.for_platform(get_platform("a2a3sim"))
    source = tmp_path / "broken.cpp"
    source.write_text('#include "pto/abi.h"\nextern "C" void k(PtoCore* c) { return c->nope; }\n')
    with pytest.raises(CompileError) as info:
        compile_shared(toolchain, source, tmp_path / "broken.so", [INCLUDE_DIR])
    error = info.value
    assert error.source == source and error.returncode != 0
    assert "broken.cpp:2" in error.stderr and "nope" in error.stderr
    assert str(source) in str(error)
    assert not (tmp_path / "broken.so").exists()


def test_compiler_that_writes_no_output_is_a_compile_error(tmp_path):
    liar = tmp_path / "liar-cxx"
    liar.write_text("#!/bin/sh\nexit 0\n")
    liar.chmod(liar.stat().st_mode | stat.S_IEXEC)
    source = tmp_path / "k.cpp"
    source.write_text("int x;\n")
    with pytest.raises(CompileError, match="wrote no"):
        compile_shared(Toolchain(get_platform("a2a3sim"), liar), source, tmp_path / "k.so", [])


def test_binaries_hold_no_absolute_path_of_source_or_headers(tmp_path, monkeypatch):
    monkeypatch.delenv("PYPTO_CXX", raising=False)
    include = tmp_path / "include"
    include.mkdir()
    (include / "where.h").write_text("static const char* where() { return __FILE__; }\n")
    source = tmp_path / "build" / "k.cpp"
    source.parent.mkdir()
    source.write_text(
        '#include "where.h"\nextern "C" const char* k() { return where(); }\n'
        'extern "C" const char* here() { return __FILE__; }\n'
    )
    toolchain = Toolchain.for_platform(get_platform("a2a3sim"))
    compile_shared(toolchain, source, tmp_path / "build" / "k.so", [include])
    binary = (tmp_path / "build" / "k.so").read_bytes()
    assert b"include/where.h" in binary and b"k.cpp" in binary
    assert str(tmp_path).encode() not in binary
