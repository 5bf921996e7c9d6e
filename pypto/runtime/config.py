"""`RunConfig`: every option of one run (and of the compile a JIT call may trigger)."""

from __future__ import annotations

import contextvars
import os
import sys
import warnings
from dataclasses import InitVar, dataclass, field
from types import FrameType

from pypto.ir.diagnostics import DiagnosticPhase, PyptoWarning
from pypto.platform import (
    SIMULATE_DEVICE_ENV,
    check_target,
    default_platform,
    get_platform,
    simulator_for,
)
from pypto.runtime.errors import UnsupportedError


@dataclass(kw_only=True)
class RunConfig:
    """Options for running a kernel; see docs API.md §3.

    Scheduling: `workers` simulated cores run tasks concurrently (default: the
    platform's cores, bounded by the host's); `schedule_seed=None` runs ready tasks as
    they come, an int runs them one at a time in a seeded order (same seed, same order
    and bits); `detect_races=True` raises `RaceError` for conflicting accesses no edge
    orders.  DFX: `enable_dep_gen` writes `<work_dir>/dfx_outputs/deps.json`,
    `enable_swimlane` writes `swimlane.json` there (work_dir: `$PYPTO_WORK_DIR`, else
    the current directory; see `pypto.runtime.dfx`); `enable_dump_args=1` dumps the
    tensors tagged with `pl.dump_tag` / `dumps=`, `=2` every task's tensors, to
    `dfx_outputs/args_dump/` (see `pypto.runtime.dump`).

    Upstream PyPTO's arguments (docs/upstream-compat.md): `enable_chip_swimlane` is
    `enable_swimlane`; `device_id` names the chip (on a simulator, the simulated one: its
    swimlane is labelled with it); `strategy` the pass pipeline (only
    `OptimizationStrategy.Default` exists); `backend_type` must be the platform's backend;
    `compile_profiling` writes `report/pipeline_profile.{txt,json}` with the artifact;
    `distributed_config` (a multi-rank program) is refused when the config is used.
    `ring_task_window` / `ring_heap` / `ring_dep_pool` size the runtime's four task rings
    (an int for all, or a list of 4; 0 or None: the default, `PTO2_RING_*` overriding it)
    and `enable_scope_stats` writes `dfx_outputs/scope_stats/scope_stats.jsonl`; see
    `pypto.runtime.rings` (the native scheduler serves them).  `save_kernels` /
    `save_kernels_dir` and `codegen_only` belong to `pypto.runtime.run()`, as upstream's
    do: it copies the artifact into `save_kernels_dir` / stops after the compile; any other
    dispatch warns that it does not read them.  `enable_pmu` (other than 0) and
    `aicpu_thread_num` sample or size the device's own runtime and are refused.  With
    PYPTO_SIMULATE_DEVICE=1 a device platform ("a2a3", "a5") runs on its simulator, with
    PYPTO_SIMULATE_DEVICE=cpu-model as device code on its CPU-model platform ("a2a3cpu"):
    `platform` is then the stand-in and `requested_platform` the device asked for.
    """

    platform: str = field(default_factory=default_platform)  # $PYPTO_PLATFORM, else a2a3sim
    rtol: float = 1e-5
    atol: float = 1e-5
    golden_data_dir: str | os.PathLike | None = None
    dump_passes: bool = False
    enable_dump_args: int = 0
    enable_dep_gen: bool = False
    enable_swimlane: bool = False
    detect_races: bool = False
    schedule_seed: int | None = None
    diagnostic_phase: DiagnosticPhase | None = None
    disabled_diagnostics: object = None
    workers: int | None = None
    device_id: int | None = None
    strategy: object = None
    backend_type: object = None
    compile_profiling: bool = False
    distributed_config: object = None
    ring_task_window: int | list[int] | None = None
    ring_heap: int | list[int] | None = None
    ring_dep_pool: int | list[int] | None = None
    enable_scope_stats: bool = False
    save_kernels: bool = False
    save_kernels_dir: str | os.PathLike | None = None
    codegen_only: bool = False
    enable_pmu: int = 0
    aicpu_thread_num: int | None = None
    enable_chip_swimlane: InitVar[bool | None] = None

    def __post_init__(self, enable_chip_swimlane: bool | None) -> None:
        self.requested_platform = self.platform
        get_platform(self.platform)  # raises ValueError listing the known platforms
        self.platform = simulator_for(self.platform)
        self.where = caller_location()  # the user's line, for errors about what it asked for
        dump = self.enable_dump_args
        if dump is True or dump not in (0, 1, 2):
            raise ValueError(f"enable_dump_args must be 0 (off), 1 (tagged tensors) or 2 "
                             f"(every task's tensors), got {self.enable_dump_args!r}")
        if self.workers is not None and (
            not isinstance(self.workers, int) or isinstance(self.workers, bool) or self.workers < 1
        ):
            raise ValueError(f"workers must be a positive integer or None, got {self.workers!r}")
        if self.schedule_seed is not None and (
            not isinstance(self.schedule_seed, int) or isinstance(self.schedule_seed, bool)
        ):
            raise TypeError(f"schedule_seed must be an int or None, got {self.schedule_seed!r}")
        if enable_chip_swimlane is not None:
            self.enable_swimlane = bool(enable_chip_swimlane) or self.enable_swimlane
        self._check_upstream_arguments()

    def _check_upstream_arguments(self) -> None:
        if self.device_id is not None and (not isinstance(self.device_id, int)
                                           or isinstance(self.device_id, bool)
                                           or self.device_id < 0):
            raise ValueError(f"device_id must be a non-negative integer, got {self.device_id!r}")
        check_target(self.platform, self.backend_type, self.strategy)
        from pypto.runtime import rings

        self.rings = {resource: rings.resolve(resource, getattr(self, f"ring_{resource}"))
                      for resource in rings.RESOURCES}
        """Per resource, the four rings' capacities this run gets."""
        if not isinstance(self.enable_scope_stats, bool):
            raise TypeError(f"enable_scope_stats must be True or False, got "
                            f"{self.enable_scope_stats!r}")
        for name, off in (("enable_pmu", (0, False, None)), ("aicpu_thread_num", (None,))):
            if getattr(self, name) not in off:
                raise TypeError(f"{self.where}: RunConfig({name}=...) is not supported: it "
                                f"{DEVICE_ONLY_ARGUMENTS[name]}; remove the argument")
        self._harness_warned = False

    def warn_harness_arguments(self) -> None:
        """Warns once that this dispatch does not read upstream's harness arguments (only
        pypto.runtime.run() does, as upstream's; the dispatch goes ahead, as there)."""
        if not (self.save_kernels or self.codegen_only or self.save_kernels_dir is not None) \
                or self._harness_warned or IN_HARNESS.get():
            return  # the warm path of a JIT call: three reads
        asked = [n for n in HARNESS_ARGUMENTS if getattr(self, n) not in (False, None)]
        self._harness_warned = True
        warnings.warn(PyptoWarning(
            f"{self.where}: RunConfig({', '.join(f'{n}=' for n in asked)}...) is read by "
            "pypto.runtime.run() only, as upstream's; this call dispatches the program "
            "and leaves them unread (compiled.output_dir is where the artifact is; "
            "kernel.compile(...) builds without running)"), stacklevel=2)

    @property
    def sizes_rings(self) -> bool:
        """True when the config asks for ring sizes or scope stats (native scheduler only)."""
        return self.enable_scope_stats or any(
            getattr(self, f"ring_{r}") is not None for r in ("task_window", "heap", "dep_pool"))

    def check_single_device(self) -> None:
        """Refuses a config asking for a multi-rank program: this project runs one chip."""
        if self.distributed_config is not None:
            raise UnsupportedError(
                f"{self.where}: RunConfig(distributed_config=...) asks for a multi-rank "
                "(distributed) program; this project compiles and runs single-chip programs "
                "only (no HOST orchestrator, ranks or collectives)",
                hint="drop distributed_config and run the chip-level @pl.jit program on one "
                     "device; multi-rank programs need upstream PyPTO's distributed runtime")

    @property
    def simulated_device(self) -> str | None:
        """The device platform PYPTO_SIMULATE_DEVICE replaced by `platform`, else None."""
        return self.requested_platform if self.requested_platform != self.platform else None


# Upstream RunConfig arguments that ask the device's own runtime for something the simulator
# does not have (refused when they ask for it), and what to do instead.
DEVICE_ONLY_ARGUMENTS = {
    "enable_pmu": "samples the device's performance counters; the simulator has none "
                  "(enable_swimlane=True records each task's time)",
    "aicpu_thread_num": "sets the device's AICPU scheduler threads (workers= sets the "
                        "simulated cores here)",
}
# What only pypto.runtime.run() reads (upstream's harness arguments).
HARNESS_ARGUMENTS = ("save_kernels", "save_kernels_dir", "codegen_only")
# Set while pypto.runtime.run() dispatches: it has read them.
IN_HARNESS: contextvars.ContextVar[bool] = contextvars.ContextVar("in_harness", default=False)


def caller_location() -> str:
    """file:line of the first frame outside pypto: where the user built the config."""
    frame: FrameType | None = sys._getframe(1)
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    while frame is not None and (frame.f_code.co_filename.startswith("<")
                                 or os.path.abspath(frame.f_code.co_filename).startswith(package)):
        frame = frame.f_back  # pypto's frames, and the dataclass's generated __init__
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


__all__ = ["DEVICE_ONLY_ARGUMENTS", "HARNESS_ARGUMENTS", "RunConfig", "SIMULATE_DEVICE_ENV",
           "caller_location"]
