"""Running one kernel on a simulator and through `torch_codegen`, for the tests that
compare the two (the torch side is the registry's semantics, `torch_runtime`)."""

from __future__ import annotations

import torch

from pypto.debug import load_entry, torch_codegen
from pypto.runtime import RunConfig


def sim_and_torch(kernel, args: list[torch.Tensor], platform: str,
                  check_shapes: bool = False) -> tuple[list, list]:
    """(the arguments after the simulator run, after the torch_codegen run), each run on
    its own clones of `args`."""
    sim_args = [a.clone() for a in args]
    kernel(*sim_args, config=RunConfig(platform=platform))
    program = kernel.lower(*args, config=RunConfig(platform=platform))
    torch_args = [a.clone() for a in args]
    load_entry(torch_codegen(program, check_shapes=check_shapes), program.entry)(*torch_args)
    return sim_args, torch_args
