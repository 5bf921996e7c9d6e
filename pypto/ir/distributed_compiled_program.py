"""Upstream PyPTO's multi-rank program configuration, accepted so programs import, and
refused where it would be used.

A `DistributedConfig` asks for a program over several devices (ranks, a HOST
orchestrator, collectives).  This project compiles and runs single-chip programs: passing
one to `RunConfig(distributed_config=...)` or `ir.compile(distributed_config=...)` raises
`pypto.runtime.UnsupportedError` naming the line, when the config is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class DistributedConfig:
    """The devices (ranks) and host sub-workers of a multi-rank program."""

    device_ids: list = field(default_factory=list)
    num_sub_workers: int = 0


class DistributedCompiledProgram:
    """Upstream's compiled multi-rank program.  Nothing here produces one: a distributed
    compile is refused (see the module docstring)."""


__all__ = ["DistributedCompiledProgram", "DistributedConfig"]
