"""`pypto.runtime.run`: upstream PyPTO's one-call harness, compile a program and run it.

The runtime never compiles by itself: `run` hands a `@pl.program` to `pypto.ir.compile`
(the compile layer's public facade, imported when called) and a `@pl.jit` function to its
own call, then runs the artifact with the config: a `golden_data_dir` is compared, DFX
outputs are written, as for any run.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pypto.ir.errors import api_boundary
from pypto.runtime.config import IN_HARNESS, RunConfig


@api_boundary
def run(program: Any, *args: Any, config: RunConfig | None = None) -> Any:
    """Compiles `program` (a `@pl.program` or a `@pl.jit` function) for the config's
    platform through the content-keyed cache and runs it on `args`; returns its outputs.
    Without `args`, a `@pl.program` is compiled only: the `CompiledProgram` is returned.
    A `@pl.program` with `pl.dynamic` entry dimensions is specialised to `args` first.

    Upstream's harness arguments of the config are read here (only here, as upstream's):
    `codegen_only=True` stops after the compile and returns the `CompiledProgram`;
    `save_kernels_dir=` receives a copy of the artifact (its generated sources, binaries and
    manifest; `save_kernels=True` alone keeps it where it is, `compiled.output_dir`)."""
    import pypto.ir as ir

    config = config if config is not None else RunConfig()
    if not isinstance(config, RunConfig):
        raise TypeError(f"config must be a pypto.runtime.RunConfig, got {type(config).__name__}")
    config.check_single_device()
    if getattr(program, "__pypto_kernel__", False):
        harness = config.codegen_only or config.save_kernels_dir is not None
        compiled = program.compile(*args, config=config) if harness else None
    else:
        if hasattr(program, "specialize_for") and args:  # a pl.dynamic @pl.program
            program = program.specialize_for(*args)
        if not isinstance(program, ir.Program):
            raise TypeError(f"run takes a @pl.program or a @pl.jit function, got "
                            f"{type(program).__name__}")
        compiled = ir.compile(program, platform=config.platform, dump_passes=config.dump_passes,
                              diagnostic_phase=config.diagnostic_phase,
                              disabled_diagnostics=config.disabled_diagnostics,
                              profiling=config.compile_profiling, strategy=config.strategy,
                              backend_type=config.backend_type)
    if compiled is not None and config.save_kernels_dir is not None:
        shutil.copytree(compiled.output_dir, Path(config.save_kernels_dir), dirs_exist_ok=True)
    if config.codegen_only or (compiled is not None and not args):
        return compiled
    token = IN_HARNESS.set(True)
    try:
        if compiled is None:
            return program(*args, config=config)
        return compiled(*args, config=config)
    finally:
        IN_HARNESS.reset(token)


__all__ = ["run"]
