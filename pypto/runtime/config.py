"""`RunConfig`: every option of one run (and of the compile a JIT call may trigger)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from pypto.platform import default_platform, get_platform


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
    diagnostic_phase: object = None
    disabled_diagnostics: object = None
    workers: int | None = None

    def __post_init__(self) -> None:
        get_platform(self.platform)  # raises ValueError listing the known platforms
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
