"""Dispatch overhead: a JIT call on a warm cache, and the per-task cost of a large graph.

1. `kernels.add(a, b, out)` on [16, 32] FP32 after the first call (compiled, loaded and
   in the in-memory map) against `torch.add(a, b, out=out)` on the same tensors.
   Targets: ≤ 10x the torch call and ≤ 50 µs.
2. `kernels.many_tasks`: 10,000 tasks of a 32-byte load/store each (as good as empty);
   the whole run divided by the task count (submission through the orchestration's
   dispatch call, dependency inference, hand-off to a worker, the kernel call,
   completion) against one empty torch op call.  Target: ≤ 10 µs per task.
3. `kernels.matmul_bias_piped` ([64, 64] x [64, 128] FP16 + bias, `pl.split(UP_DOWN)`: a
   group of the cube and both vector lanes, run at once on threads, the matmul's value
   crossing through the cross-core pipe's ring) against `kernels.matmul_bias`, the same
   block without pl.split (the value through a scratch tensor in global memory, the units
   one after the other): what the simulated pipe costs a call (no target yet: a group
   task starts two threads for its vector lanes and hands each crossing between threads;
   3.7x to 5x the memory path, 135 to 210 µs more a call, in the first two runs).

Both rows run on the scheduler the runtime picks (the native one; see
docs/dependencies.md "Two schedulers"); the second row's note adds the per-task figure
of the Python scheduler (`PYPTO_SCHEDULER=python`) measured in the same run.
"""

from __future__ import annotations

import os
import warnings

from bench.harness import Row, Settings, calibrate, median_time


def measure(settings: Settings) -> list[Row]:
    """The two dispatch rows."""
    import torch

    from bench import kernels

    warnings.simplefilter("ignore")  # perf hints about the tiny tiles are expected here
    rows = []
    a, b, out = torch.randn(16, 32), torch.randn(16, 32), torch.empty(16, 32)
    kernels.add(a, b, out)  # compile, load, remember

    def torch_call():
        return torch.add(a, b, out=out)

    def jit_call():
        return kernels.add(a, b, out)

    ours = median_time(jit_call, settings.runs, inner=calibrate(jit_call, 0.05))
    peer = median_time(torch_call, settings.runs, inner=calibrate(torch_call, 0.02))
    rows.append(Row("dispatch", "JIT call, warm cache ([16, 32] add)", ours, peer,
                    "torch.add(a, b, out=out)", target="<= 10x and <= 50 µs",
                    met=ours <= 10 * peer and ours <= 50e-6))

    x = torch.randn(kernels.TASKS, kernels.WIDTH)
    y = torch.empty_like(x)
    compiled = kernels.many_tasks.compile(x, y)
    compiled(x, y)
    total = median_time(lambda: compiled(x, y), max(3, settings.runs // 2 + 1))
    per_task = total / kernels.TASKS
    python_per_task = _on_python_scheduler(
        lambda: median_time(lambda: compiled(x, y), 3) / kernels.TASKS)
    empty = torch.empty(0)

    def empty_op():
        return torch.add(empty, empty, out=empty)

    peer = median_time(empty_op, settings.runs, inner=calibrate(empty_op, 0.02))
    rows.append(Row("dispatch", f"scheduling, per task ({kernels.TASKS:,}-task graph)",
                    per_task, peer, "one empty torch op call", target="<= 10 µs per task",
                    met=per_task <= 10e-6,
                    note=f"whole run {total * 1e3:.0f} ms, default workers; Python "
                         f"scheduler {python_per_task * 1e6:.1f} µs per task"))
    a, b = torch.randn(64, 64, dtype=torch.float16), torch.randn(64, 128, dtype=torch.float16)
    bias, out = torch.randn(64, 128), torch.empty(64, 128)
    kernels.matmul_bias_piped(a, b, bias, out)  # compile, load, remember
    kernels.matmul_bias(a, b, bias, out)

    def piped():
        return kernels.matmul_bias_piped(a, b, bias, out)

    def through_memory():
        return kernels.matmul_bias(a, b, bias, out)

    ours = median_time(piped, settings.runs, inner=calibrate(piped, 0.05))
    peer = median_time(through_memory, settings.runs, inner=calibrate(through_memory, 0.05))
    rows.append(Row("dispatch", "mixed block through the cross-core pipe (pl.split)", ours,
                    peer, "the same block through global memory",
                    note="[64, 64] x [64, 128] FP16 + bias; the simulator starts the two "
                         "vector lanes' threads for each group task and hands every crossing "
                         "between threads (pto/pipe.hpp)"))
    return rows


def _on_python_scheduler(measure):
    """`measure()` with PYPTO_SCHEDULER=python (the reference scheduler)."""
    before = os.environ.get("PYPTO_SCHEDULER")
    os.environ["PYPTO_SCHEDULER"] = "python"
    try:
        return measure()
    finally:
        if before is None:
            del os.environ["PYPTO_SCHEDULER"]
        else:
            os.environ["PYPTO_SCHEDULER"] = before
