"""Running one kernel on a simulator and through `torch_codegen`, for the tests that
compare the two (the torch side is the registry's semantics, `torch_runtime`)."""

from __future__ import annotations

import pytest
import torch

from pypto.debug import load_entry, torch_codegen
from pypto.platform import get_platform
from pypto.runtime import RunConfig


def sim_and_torch(kernel, args: list[torch.Tensor], platform: str,
                  check_shapes: bool = False) -> tuple[list, list]:
    """(the arguments after the simulator run, after the torch_codegen run), each run on
    its own clones of `args` (scalars are passed as they are)."""
    sim_args = _clones(args)
    kernel(*sim_args, config=RunConfig(platform=platform))
    program = kernel.lower(*args, config=RunConfig(platform=platform))
    torch_args = _clones(args)
    code = torch_codegen(program, check_shapes=check_shapes,
                         backend=get_platform(platform).backend)
    load_entry(code, program.entry)(*torch_args)
    return sim_args, torch_args


def _clones(args: list) -> list:
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def dtype_sweep(dtypes, default=("FP32", "INT8")) -> list:
    """The dtypes of a sweep as pytest parameters: `default` in the README's run, the rest
    (one build each per platform) under `-m slow`, as the per-op lanes do."""
    return [d if d in default else pytest.param(d, marks=pytest.mark.slow)
            for d in sorted(dtypes)]
