"""A binary's build as steps: a compile per source (what a launcher such as ccache or distcc
takes) and a link where the platform's rule says so; the same steps run in-process
(`build_artifact`, `@pl.jit`) and as SCons steps, with or without a launcher, to the same
bytes."""

import dataclasses
import json
import os
import shutil
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from test_build_artifact import KEY, tiny_sources

import pypto.language as pl
from pypto.compiler import CompileOptions, build_program
from pypto.filesystem import lock_with_deadline
from pypto.ir.dtypes import DataType
from pypto.ir.types import TensorType
from pypto.platform import compiler_family, get_platform
from pypto.sim import INCLUDE_DIR
from pypto.toolchain import (
    ArtifactPlan,
    CompileError,
    Step,
    Toolchain,
    build_artifact,
    finish_artifact,
    run_plan,
    run_step,
    stage_artifact,
)
from pypto.toolchain.compiler import PrecompiledHeader

# A launcher as ccache or distcc is one: it logs the command it is given and runs it.
LOGGING_LAUNCHER = """#!/bin/sh
echo "$*" >> LOG
exec "$@"
"""


@pytest.fixture
def launcher(tmp_path):
    log = tmp_path / "launched.log"
    path = tmp_path / "logging-launcher"
    path.write_text(LOGGING_LAUNCHER.replace("LOG", str(log)))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path, log


@pytest.fixture
def sim(monkeypatch):
    monkeypatch.delenv("PYPTO_CXX", raising=False)
    platform = get_platform("a2a3sim")
    return platform, Toolchain.for_platform(platform)


def test_a_sim_binary_is_a_compile_to_an_object_then_a_link(sim):
    _, toolchain = sim
    compile_, link = toolchain.steps(["kernels/k.cpp"], "kernels/k.so", [INCLUDE_DIR], "vector")
    assert (compile_.kind, compile_.cwd, compile_.inputs, compile_.output) == (
        "compile", "kernels", ("kernels/k.cpp",), "kernels/k.o")
    assert compile_.command[0] == str(toolchain.compiler)
    assert "-c" in compile_.command and compile_.command[-3:] == ("k.cpp", "-o", "k.o")
    assert f"-I{INCLUDE_DIR}" in compile_.command
    assert link.command == (str(toolchain.compiler), "-shared", "k.o", "-o", "k.so")
    assert (link.kind, link.cwd, link.inputs, link.output) == (
        "link", "kernels", ("kernels/k.o",), "kernels/k.so")


def test_a_device_binary_is_its_compiled_object(tmp_path):
    bisheng = tmp_path / "bisheng"
    bisheng.write_text("#!/bin/sh\n")
    toolchain = Toolchain(get_platform("a5"), bisheng)
    (step,) = toolchain.steps(["orchestration.cpp"], "orchestration.o", [INCLUDE_DIR])
    assert step.kind == "compile" and step.cwd == "."
    assert step.command[-3:] == ("orchestration.cpp", "-o", "orchestration.o")


def test_without_link_flags_a_binary_has_one_source(tmp_path):
    toolchain = Toolchain(get_platform("a5"), tmp_path / "bisheng")
    with pytest.raises(ValueError, match="no link_flags: a binary is one compiled source"):
        toolchain.steps(["a.cpp", "b.cpp"], "a.o", [])


def test_several_sources_link_into_one_binary(sim, tmp_path):
    _, toolchain = sim
    (tmp_path / "a.cpp").write_text('extern "C" int a() { return 1; }\n')
    (tmp_path / "b.cpp").write_text('extern "C" int b() { return 2; }\n')
    steps = toolchain.steps(["a.cpp", "b.cpp"], "ab.so", [])
    assert [s.kind for s in steps] == ["compile", "compile", "link"]
    assert steps[-1].inputs == ("a.o", "b.o")
    for step in steps:
        run_step(step, tmp_path)
    assert (tmp_path / "ab.so").read_bytes()[:4] == b"\x7fELF"



def test_a_launcher_goes_in_front_of_compiles_not_links(sim):
    _, toolchain = sim
    compile_, link = toolchain.steps(["k.cpp"], "k.so", [])
    assert compile_.argv(("ccache",)) == ["ccache", *compile_.command]
    assert compile_.argv(("ccache", "distcc")) == ["ccache", "distcc", *compile_.command]
    assert link.argv(("distcc",)) == list(link.command)


def test_steps_and_plans_read_back_as_written(sim, tmp_path):
    platform, toolchain = sim
    plan = stage_artifact(tiny_sources(), platform, toolchain, KEY, tmp_path)
    again = ArtifactPlan.from_json(json.loads(json.dumps(plan.to_json())))
    assert again == plan and isinstance(again.units[0][0], Step)
    with pytest.raises(ValueError, match="schema"):
        ArtifactPlan.from_json({**plan.to_json(), "schema": 0})


def test_a_plan_run_elsewhere_and_finished_gives_the_same_artifact(sim, tmp_path):
    platform, toolchain = sim
    build_artifact(tiny_sources(), platform, toolchain, KEY, tmp_path / "here")
    # As pypto.scons does: stage in one directory, run the steps there, then copy what
    # the plan names into another and finish it.
    plan = stage_artifact(tiny_sources(), platform, toolchain, KEY, tmp_path / "staged")
    run_plan(plan, tmp_path / "staged")
    for relpath in (*plan.files, *plan.binaries):
        (tmp_path / "there" / relpath).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp_path / "staged" / relpath, tmp_path / "there" / relpath)
    finish_artifact(plan, tmp_path / "there")
    assert _files(tmp_path / "here") == _files(tmp_path / "there")
    assert not list((tmp_path / "here").rglob("*.o"))  # intermediates dropped


def test_a_launcher_runs_every_compile_and_changes_no_byte(sim, tmp_path, launcher):
    platform, toolchain = sim
    path, log = launcher
    build_artifact(tiny_sources(), platform, toolchain, KEY, tmp_path / "plain")
    build_artifact(tiny_sources(), platform, toolchain, KEY, tmp_path / "launched", (str(path),))
    assert _files(tmp_path / "plain") == _files(tmp_path / "launched")
    launched = log.read_text().splitlines()
    assert len(launched) == 3 and all(" -c " in line for line in launched)  # 3 sources


@pl.jit
def triple(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(x, 3.0)
    return out


def test_jit_builds_run_compiles_through_pypto_compiler_launcher(tmp_path, launcher,
                                                                 monkeypatch):
    path, log = launcher
    monkeypatch.delenv("PYPTO_CXX", raising=False)
    program = triple.frontend_for_types([TensorType((8, 32), DataType.FP32)] * 2)
    options = CompileOptions(platform="a5sim")
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "plain"))
    plain = build_program(program, options)  # the content-keyed cache, as @pl.jit builds
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "launched"))
    monkeypatch.setenv("PYPTO_COMPILER_LAUNCHER", f"{path} ")
    launched = build_program(program, options)
    assert launched.name == plain.name  # one content key
    assert _files(plain) == _files(launched)
    assert log.read_text().count(" -c ") == len(list(launched.rglob("*.cpp")))


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _cpu_model_or_skip(name: str) -> Toolchain:
    from pypto.toolchain import ToolchainNotFoundError

    try:
        return Toolchain.for_platform(get_platform(name))
    except ToolchainNotFoundError as exc:
        pytest.skip(f"no compiler or pto-isa for {name}: {exc}")


def _clang_cpu_model_or_skip(name: str) -> Toolchain:
    toolchain = _cpu_model_or_skip(name)
    if (compiler_family(toolchain.version()) or ("",))[0] != "clang":
        pytest.skip(f"precompiled headers are Clang's; {name} compiles with "
                    f"{toolchain.version()!r}")
    return toolchain


def _cpu_model_plan(toolchain: Toolchain, out: Path):
    from pypto.codegen import generate
    from pypto.compiler import lower

    platform = toolchain.platform
    program = triple.frontend_for_types([TensorType((8, 32), DataType.FP32)] * 2)
    sources = generate(lower(program, platform), program, platform)
    (name,) = [k.name for k in sources.kernels]
    return stage_artifact(sources, platform, toolchain, KEY, out), name


def test_a_cpu_model_kernel_compiles_its_launcher_which_includes_the_device_source(
        tmp_path):
    toolchain = _cpu_model_or_skip("a2a3cpu")
    plan, name = _cpu_model_plan(toolchain, tmp_path)
    kernel, orchestration = plan.units
    # One translation unit: pto-isa's headers are parsed (or loaded precompiled) once.
    assert [(s.kind, s.inputs, s.output) for s in kernel] == [
        ("compile", (f"kernels/{name}.launch.cpp",), f"kernels/{name}.launch.o"),
        ("link", (f"kernels/{name}.launch.o",), f"kernels/{name}.so")]
    launcher = (tmp_path / "kernels" / f"{name}.launch.cpp").read_text()
    assert f'#include "{name}.cpp"' in launcher
    assert [s.kind for s in orchestration] == ["compile", "link"]
    # From the build rule's data: every compile to an object, the link with link_flags.
    rule = toolchain.platform.compiler
    for step in (kernel[0], orchestration[0]):
        assert step.command[:len(toolchain.command)] == toolchain.command
        assert set(rule.flags) <= set(step.command) and "-shared" not in step.command
    assert "-D__CPU_SIM" in kernel[0].command and "-D__CPU_SIM" not in orchestration[0].command
    assert kernel[1].command == (*toolchain.command, *toolchain.target_flags(),
                                 *rule.link_flags, f"{name}.launch.o", "-o", f"{name}.so")


def test_a_cpu_model_kernel_loads_the_precompiled_header_of_its_compiler_flags_and_headers(
        tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    toolchain = _clang_cpu_model_or_skip("a5cpu")
    plan, _ = _cpu_model_plan(toolchain, tmp_path / "artifact")
    (compile_kernel, _), (compile_orchestration, _) = plan.units
    pch = compile_kernel.pch
    assert pch is not None and compile_orchestration.pch is None
    assert pch.path.parent.parent == tmp_path / "cache" / "pch"
    assert compile_kernel.command[-5:-3] == ("-include-pch", str(pch.path))
    assert "-include-pch" not in compile_orchestration.command
    # The header is compiled exactly as the kernels are (less -c: it is no object).
    assert [f for f in compile_kernel.command[:-5] if f != "-c"] == list(pch.command[:-5])
    assert pch.prelude == "#include <pto/pto-inst.hpp>\n#include <pto/abi.h>\n"
    # It travels with the plan, so a SCons step (or another process) can build it.
    assert ArtifactPlan.from_json(json.loads(json.dumps(plan.to_json()))) == plan
    # Another flag or another header is another precompiled header.
    flags = toolchain.platform.compiler.flags + ("-DPYPTO_TEST_FLAG=1",)
    other = Toolchain(dataclasses.replace(toolchain.platform, compiler=dataclasses.replace(
        toolchain.platform.compiler, flags=flags)), toolchain.compiler, toolchain.launcher_args)
    includes = toolchain.include_dirs()
    assert other.precompiled_header(includes, "vector").directory != pch.directory
    extra = tmp_path / "include"
    (extra / "pto").mkdir(parents=True)
    (extra / "pto" / "extra.h").write_text("#define EXTRA 1\n")
    before = toolchain.precompiled_header((*includes, extra), "vector").directory
    (extra / "pto" / "extra.h").write_text("#define EXTRA 2\n")
    assert toolchain.precompiled_header((*includes, extra), "vector").directory != before


@pytest.mark.slow
def test_a_precompiled_header_changes_no_byte_of_a_kernel_object(tmp_path, monkeypatch):
    """Slow: the header and a kernel compiled without it take seconds each."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    toolchain = _clang_cpu_model_or_skip("a5cpu")
    plan, _ = _cpu_model_plan(toolchain, tmp_path / "artifact")
    step = plan.units[0][0]
    run_step(step, tmp_path / "artifact")
    with_header = (tmp_path / "artifact" / step.output).read_bytes()
    flag = step.command.index("-include-pch")
    plain = dataclasses.replace(step, command=step.command[:flag] + step.command[flag + 2:],
                                pch=None)
    (tmp_path / "artifact" / step.output).unlink()
    run_step(plain, tmp_path / "artifact")
    assert (tmp_path / "artifact" / step.output).read_bytes() == with_header


def test_a_precompiled_header_is_built_once_and_renamed_into_place(tmp_path):
    # A stand-in compiler: logs each run, then writes the prelude as the "header".
    fake = ("sh", "-c", 'echo run >> ../runs; sleep 0.2; cat prelude.hpp > "$2"', "sh")
    pch = PrecompiledHeader(str(tmp_path / "pch" / "key"), "#include <x.h>\n", fake)
    with ThreadPoolExecutor(max_workers=4) as pool:
        built = list(pool.map(lambda _: pch.ensure(), range(4)))
    assert built == [pch.path] * 4
    assert (tmp_path / "pch" / "runs").read_text() == "run\n"
    assert pch.path.read_text() == "#include <x.h>\n"
    assert sorted(p.name for p in pch.path.parent.iterdir()) == [
        ".lock", "prelude.hpp", "prelude.pch"]


def test_a_precompiled_header_that_fails_reports_the_compiler_and_leaves_no_header(tmp_path):
    fake = ("sh", "-c", 'echo "prelude.hpp:1: no such header" >&2; echo partial > "$2"; '
            "exit 1", "sh")
    pch = PrecompiledHeader(str(tmp_path / "key"), "#include <missing.h>\n", fake)
    with pytest.raises(CompileError, match="no such header"):
        pch.ensure()
    assert not pch.path.exists()
    assert not [p for p in pch.path.parent.iterdir() if p.name.endswith(".pch")]


def test_a_precompiled_header_locked_past_the_deadline_is_a_compile_error_naming_the_lock(
        tmp_path, monkeypatch):
    fake = ("sh", "-c", 'cat prelude.hpp > "$2"', "sh")
    pch = PrecompiledHeader(str(tmp_path / "key"), "#include <x.h>\n", fake)
    pch.path.parent.mkdir()
    held = lock_with_deadline(pch.path.parent / ".lock", 1.0)
    monkeypatch.setattr("pypto.toolchain.compiler.PCH_LOCK_TIMEOUT_S", 0.2)
    try:
        with pytest.raises(CompileError, match=r"stayed locked for 0.2 s: another build of "
                                               r"this precompiled header .*fuser -v .*\.lock"):
            pch.ensure()
    finally:
        os.close(held)
    assert not pch.path.exists()
    assert pch.ensure() == pch.path and pch.path.read_text() == "#include <x.h>\n"


@pytest.mark.slow
def test_a_cpu_model_artifact_is_the_same_bytes_anywhere_and_through_a_launcher(
        tmp_path, launcher, monkeypatch):
    """Slow: two CPU-model builds (pto-isa's headers take seconds a source)."""
    path, log = launcher
    _cpu_model_or_skip("a5cpu")
    program = triple.frontend_for_types([TensorType((8, 32), DataType.FP32)] * 2)
    options = CompileOptions(platform="a5cpu")
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "here"))
    plain = build_program(program, options)
    # Another directory (zig's Clang records the compile's directory unless told not to)
    # and every compile through the launcher.
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "elsewhere" / "cache"))
    monkeypatch.setenv("PYPTO_COMPILER_LAUNCHER", str(path))
    launched = build_program(program, options)
    assert launched.name == plain.name
    assert _files(plain) == _files(launched)
    launched_sources = sorted(line.split(" -o ")[0].split()[-1]
                              for line in log.read_text().splitlines())
    # Each kernel's launcher (which includes its device source) and the orchestration.
    assert launched_sources == sorted(p.name for p in launched.rglob("*.cpp")
                                      if p.name.endswith(".launch.cpp")
                                      or p.name == "orchestration.cpp")
