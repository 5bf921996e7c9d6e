"""A CPU-model object is the same bytes on every host of a machine, whatever its CPU: the
build rules fix the target CPU (`[compiler.target.<machine>]`, per compiler kind), every
compile and link names it, it is in the content key, and a host-CPU flag placed before it
(what a compiler that targets the host does on its own) changes no byte."""

from __future__ import annotations

import dataclasses
import os
import subprocess

import pytest
from cpu_models import toolchain_or_skip

from pypto.platform import get_platform
from pypto.toolchain import Toolchain, ToolchainNotFoundError

# A loop Clang and GCC vectorise by the target's vector ISA (SSE2 at the x86-64 baseline,
# AVX-512 at x86-64-v4): its object changes with the CPU it is compiled for.
SOURCE = """
extern "C" void scale_add(float *a, const float *b, float s, int n)
{
    for (int i = 0; i < n; ++i) {
        a[i] = a[i] * s + b[i];
    }
}
"""

# How each compiler kind is told to compile for another x86-64 CPU than the baseline.
NEWER_CPU = {"ziglang": "-mcpu=x86_64_v4", "clang": "-march=x86-64-v4",
             "gcc": "-march=x86-64-v4"}


def _kind(toolchain: Toolchain) -> str:
    settings = toolchain.platform.compiler
    rows = settings.targets[os.uname().machine]
    return next(kind for kind, flags in rows.items() if flags == toolchain.target_flags())


def _object(toolchain: Toolchain, directory, before=(), after=()) -> bytes:
    """SOURCE compiled with the platform's vector-kernel flags, with `before` between the
    program and the flags and `after` at the end."""
    directory.mkdir()
    (directory / "k.cpp").write_text(SOURCE)
    command = [*toolchain.command, *before, *toolchain.flags("vector"), *after, "k.cpp",
               "-o", "k.o"]
    subprocess.run(command, cwd=directory, check=True, capture_output=True)
    return (directory / "k.o").read_bytes()


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_every_compile_and_link_of_a_cpu_model_kernel_names_the_fixed_target(platform):
    toolchain = toolchain_or_skip(platform)
    target = toolchain.target_flags()
    assert target, f"{platform}'s rule fixes no target for this host"
    *compiles, link = toolchain.steps(["k.cpp"], "k.so", toolchain.include_dirs(), "vector")
    pch = compiles[0].pch
    commands = [c.argv() for c in compiles] + [link.argv()]
    if pch is not None:
        commands.append(list(pch.command))
    for command in commands:
        start = command.index(target[0])
        assert tuple(command[start:start + len(target)]) == target, command


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_the_fixed_target_is_part_of_the_content_key(platform):
    toolchain = toolchain_or_skip(platform)
    settings = toolchain.platform.compiler
    machine = os.uname().machine
    kind = _kind(toolchain)
    other = {machine: {kind: ("-march=somewhere-else",)}}
    moved = dataclasses.replace(toolchain.platform,
                                compiler=dataclasses.replace(settings, targets=other))
    assert all(flag in toolchain.identity() for flag in toolchain.target_flags())
    assert Toolchain(moved, toolchain.compiler, toolchain.launcher_args).flags_digest() \
        != toolchain.flags_digest()


def test_a_host_cpu_flag_before_the_fixed_target_changes_no_byte(tmp_path):
    toolchain = toolchain_or_skip("a5cpu")
    if os.uname().machine != "x86_64":
        pytest.skip("the other CPU this test names is an x86-64 one")
    newer = NEWER_CPU[_kind(toolchain)]
    fixed = _object(toolchain, tmp_path / "fixed")
    # A host that is an x86-64-v4 (or whatever this one is, told as -march/-mcpu=native):
    # the rule's target comes later and wins.
    assert _object(toolchain, tmp_path / "newer_host", before=[newer]) == fixed
    native = "-mcpu=native" if newer.startswith("-mcpu") else "-march=native"
    assert _object(toolchain, tmp_path / "native_host", before=[native]) == fixed
    # The source does depend on the CPU: compiled for the newer one, it is other bytes.
    assert _object(toolchain, tmp_path / "newer", after=[newer]) != fixed


def test_a_host_machine_the_rule_fixes_no_target_for_is_an_error_naming_the_rule():
    toolchain = toolchain_or_skip("a5cpu")
    settings = toolchain.platform.compiler
    elsewhere = {"riscv64": dict(settings.targets[os.uname().machine])}
    platform = dataclasses.replace(get_platform("a5cpu"),
                                   compiler=dataclasses.replace(settings, targets=elsewhere))
    with pytest.raises(ToolchainNotFoundError,
                       match=rf"\[compiler\.target\.{os.uname().machine}\].*a5cpu\.toml"):
        Toolchain(platform, toolchain.compiler, toolchain.launcher_args).target_flags()
