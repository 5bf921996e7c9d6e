"""What every benchmark shares: timing by medians, result rows, the machine description.

A benchmark module exposes `measure(settings) -> list[Row]`.  A `Row` holds our median
and its peer's median, both measured in the same run on the same machine: these
machines are noisy, so only the ratio is meant to be compared across runs.
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Settings:
    """How hard to measure: `runs` repetitions of each timing (the median is reported);
    `quick` shrinks every problem to a tiny size (for the smoke test, not for numbers)."""

    runs: int = 5
    quick: bool = False


@dataclass(frozen=True)
class Row:
    """One measurement against its peer: `ours` and `peer` are medians in seconds."""

    group: str
    name: str
    ours: float
    peer: float
    peer_name: str
    target: str = ""
    note: str = ""
    met: bool | None = None
    """Whether the target holds in this run (None: no target or not judged)."""
    extra: dict = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        """ours / peer."""
        return self.ours / self.peer if self.peer > 0 else float("inf")


def median_time(fn: Callable[[], object], runs: int, *, inner: int = 1,
                setup: Callable[[], object] | None = None) -> float:
    """Median over `runs` of the wall time of `inner` calls of `fn`, divided by `inner`.

    `setup` runs before each timed repetition, outside the clock.
    """
    samples = []
    for _ in range(max(1, runs)):
        if setup is not None:
            setup()
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def paired_medians(ours: Callable[[], object], peer: Callable[[], object], runs: int,
                   *, pause_s: float = 0.01) -> tuple[float, float]:
    """Medians over `runs` of the wall time of one call of `ours` and of `peer`, timed in
    alternation (ours, peer, ours, ...) so that a change in the machine's load while they
    run weighs on both sides of the ratio alike.  Each is called once untimed first.

    Each timed call starts `pause_s` after the previous one ended: torch's OpenMP threads
    keep spinning for a few milliseconds after a parallel op (and the simulator's workers
    hold their cores briefly too), which would otherwise bill one side's idle threads to
    the other (measured: an 8-task add right after torch.add took 1.6x as long as after a
    10 ms pause, on 2 cores).
    """
    ours()
    peer()
    ours_s, peer_s = [], []
    for _ in range(max(1, runs)):
        for fn, samples in ((ours, ours_s), (peer, peer_s)):
            time.sleep(pause_s)
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
    return statistics.median(ours_s), statistics.median(peer_s)


def calibrate(fn: Callable[[], object], budget_s: float = 0.05) -> int:
    """How many calls of `fn` fill about `budget_s` (at least 1), after one warm-up call."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    return max(1, int(budget_s / once))


def fmt_time(seconds: float) -> str:
    """A duration with a unit that keeps three significant digits."""
    if not math.isfinite(seconds):
        return str(seconds)
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3g} µs"
    return f"{seconds * 1e9:.3g} ns"


def _first_line(command: list[str]) -> str:
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unavailable"
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return lines[0].strip() if lines else "unavailable"


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (else what `platform` knows)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, str]:
    """What the numbers were measured on: cores, CPU, OS and the versions that matter."""
    import torch

    cxx = os.environ.get("PYPTO_CXX") or shutil.which("g++") or "g++"
    info = {
        "date": datetime.date.today().isoformat(),
        "nproc": str(os.cpu_count()),
        "cpu": cpu_model(),
        "os": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "python": sys.version.split()[0],
        "torch": f"{torch.__version__} ({torch.get_num_threads()} intra-op threads)",
        "c++ compiler": _first_line([cxx, "--version"]),
    }
    try:
        import SCons

        info["scons"] = SCons.__version__
    except ImportError:  # pragma: no cover - scons is a dependency
        pass
    blas = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}
    info["OPENBLAS_* overrides"] = ", ".join(f"{k}={v}" for k, v in blas.items()) or "none"
    return info


def compile_steps(sources, platform_name: str, work: Path) -> tuple[Callable[[], None], int]:
    """Writes `sources` (pypto.codegen's) for the platform into the empty directory `work`
    as an artifact's build does, and returns a function that runs every compile and link
    step of that artifact one after the other (a build runs the binaries in parallel; the
    sum is the compiler's work), with the number of binaries."""
    from pypto.platform import get_platform
    from pypto.toolchain import Toolchain, run_step, stage_artifact

    platform = get_platform(platform_name)
    plan = stage_artifact(sources, platform, Toolchain.for_platform(platform), "bench", work)

    def compile_all() -> None:
        for unit in plan.units:
            for step in unit:
                run_step(step, work)

    return compile_all, len(plan.units)
