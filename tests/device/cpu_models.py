"""What the CPU-model tests share."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from pypto.compiler import CompileOptions, build_program
from pypto.platform import get_platform
from pypto.runtime import load_artifact
from pypto.toolchain import Toolchain, ToolchainNotFoundError


def toolchain_or_skip(name: str) -> Toolchain:
    """The toolchain of the CPU-model platform `name`; skips the test when it has none here
    (no recent enough compiler, or no pto-isa)."""
    try:
        return Toolchain.for_platform(get_platform(name))
    except ToolchainNotFoundError as exc:
        pytest.skip(f"no compiler for {name}: {exc}")


def outputs_agreeing_with_the_simulator(jit_fn, arguments: Callable[[], list], first_output: int,
                                        platform: str) -> list[torch.Tensor]:
    """The outputs (`arguments()[first_output:]`) of `jit_fn` run on the CPU-model
    `platform`, once they are checked equal to its simulator's (torch.equal, or the same
    bytes: NaN in the same places); each run takes fresh `arguments()`.  Skips where the
    platform has no toolchain here."""
    toolchain_or_skip(platform)
    program = jit_fn.frontend(*arguments())
    results = []
    for target in (platform, platform.replace("cpu", "sim")):
        args = arguments()
        load_artifact(build_program(program, CompileOptions(platform=target))).run(args)
        results.append(args[first_output:])
    for got, want in zip(*results, strict=True):
        assert torch.equal(got, want) or torch.equal(got.view(torch.uint8),
                                                     want.view(torch.uint8))
    return results[0]
