"""Device code: compiling the PTO-ISA sources, and running them on pto-isa's CPU model.

Per kernel, the device source of a5cpu (pto-isa's headers, `-D__CPU_SIM`, its compiler:
Clang >= 17 or GCC >= 13) is compiled against the a5sim source of the same program (our
ISA model, host g++), each uncached and every unit one after the other; then one call on
a5cpu is timed against one on a5sim, in alternation.  Skipped (one row saying why) where
no CPU-model compiler or pto-isa is found.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
import warnings
from pathlib import Path

from bench.harness import Row, Settings, compile_steps, median_time, paired_medians


def _cases(quick: bool):
    import torch

    from bench import kernels

    n = 64 if quick else 256
    return [
        ("add", kernels.add, [torch.randn(n, n), torch.randn(n, n), torch.empty(n, n)]),
        ("softmax", kernels.softmax, [torch.randn(32, n), torch.empty(32, n)]),
    ]


def _compile_seconds(program, platform_name: str, runs: int) -> tuple[float, int]:
    """Median seconds to compile every generated source of `program` for the platform."""
    from pypto.codegen import generate
    from pypto.compiler import lower
    from pypto.platform import get_platform

    platform = get_platform(platform_name)
    sources = generate(lower(program, platform), program, platform)
    work = Path(tempfile.mkdtemp(prefix="pypto-bench-device-"))
    try:
        compile_all, units = compile_steps(sources, platform_name, work)
        return median_time(compile_all, runs), units
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(settings: Settings) -> list[Row]:
    """Per kernel: device-source compile time against the sim's, and a5cpu run time
    against a5sim's."""
    from pypto.platform import get_platform
    from pypto.runtime import RunConfig
    from pypto.toolchain import Toolchain, ToolchainNotFoundError

    try:
        Toolchain.for_platform(get_platform("a5cpu"))
    except ToolchainNotFoundError as exc:
        return [Row("device", "a5cpu (skipped)", 0.0, 0.0, str(exc).split(";")[0])]
    warnings.simplefilter("ignore")
    rows = []
    runs = 1 if settings.quick else 3
    for label, kernel, args in _cases(settings.quick):
        program = kernel.frontend(*args)
        ours, units = _compile_seconds(program, "a5cpu", runs)
        peer, _ = _compile_seconds(program, "a5sim", runs)
        rows.append(Row("device", f"{label}: compile the device sources", ours, peer,
                        f"the a5sim sources (g++), {units} units serially",
                        note="pto-isa's headers, -D__CPU_SIM, zig c++ / clang / g++ >= 13"))
        cpu = kernel.compile(*args, config=RunConfig(platform="a5cpu"))
        sim = kernel.compile(*args, config=RunConfig(platform="a5sim"))
        ours, peer = paired_medians(functools.partial(cpu, *args), functools.partial(sim, *args),
                                    settings.runs if settings.quick else max(9, settings.runs))
        rows.append(Row("device", f"{label}: one call on pto-isa's CPU model", ours, peer,
                        "the same program on a5sim"))
    return rows
