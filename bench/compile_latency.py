"""Compile latency per kernel, split into parse / passes / codegen / host compiler.

For a small kernel (one add) and a large one (`kernels.transformer_block`: four InCore
kernels), each stage runs on its own, uncached: parse on a fresh `JitFunction` (source
read, AST, IR), the pass pipeline, codegen through the templates, and the host C++
compiler on every generated source one after the other (the build runs them in
parallel; the sum is the compiler's work).  Target: our Python ≤ 10% of the compiler's.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from bench.harness import Row, Settings, compile_steps, median_time


def _cases(quick: bool):
    import torch

    from bench import kernels

    small = (kernels.add, [torch.randn(16, 32), torch.randn(16, 32), torch.empty(16, 32)])
    rows = 16 if quick else 32
    large = (kernels.transformer_block, [
        torch.randn(rows, 64), torch.randn(1, 64), torch.randn(64, 64).half(),
        torch.empty(rows, 64), torch.empty(rows, 64), torch.empty(rows, 64),
        torch.empty(rows, 64).half(), torch.empty(rows, 64),
    ])
    return [("small kernel (add)", *small), ("large kernel (4 kernels, ~40 ops)", *large)]


def stages(fn, args, runs: int) -> dict[str, float]:
    """Median seconds of each stage for `fn` specialised to `args`."""
    from pypto.codegen import generate
    from pypto.compiler import CompileOptions, run_pipeline
    from pypto.language.jit import JitFunction
    from pypto.platform import get_platform

    platform = get_platform("a2a3sim")
    options = CompileOptions(platform=platform.name)

    parse = median_time(lambda: JitFunction(fn.fn, fn.func_type).frontend(*args), runs)
    program = fn.frontend(*args)
    passes = median_time(lambda: run_pipeline(program, platform, options), runs)
    lowered = run_pipeline(program, platform, options).program
    codegen = median_time(lambda: generate(lowered), runs)
    sources = generate(lowered)

    work = Path(tempfile.mkdtemp(prefix="pypto-bench-cc-"))
    try:
        compile_all, units = compile_steps(sources, platform.name, work)
        host = median_time(compile_all, max(1, runs // 2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"parse": parse, "passes": passes, "codegen": codegen, "host": host,
            "units": units}


def measure(settings: Settings) -> list[Row]:
    """One row per kernel: our Python (parse + passes + codegen) against the compiler."""
    rows = []
    runs = max(3, settings.runs)
    for label, fn, args in _cases(settings.quick):
        s = stages(fn, args, runs)
        ours = s["parse"] + s["passes"] + s["codegen"]
        rows.append(Row(
            "compile", label, ours, s["host"],
            f"host g++ -O2 on its {s['units']} sources, serially",
            target="<= 0.10x", met=ours <= 0.10 * s["host"],
            note=(f"parse {s['parse'] * 1e3:.1f} ms, passes {s['passes'] * 1e3:.1f} ms, "
                  f"codegen {s['codegen'] * 1e3:.1f} ms"),
        ))
    return rows
