"""The runtime's four task rings (upstream's PTO2 rings; docs/running.md "Task rings").

A task dispatched at runtime-scope depth d (`pl.scope()`, and the scopes the orchestration
opens around its body, each loop body and each branch unless `auto_scope=False`; depth
counts from 0, and tasks outside every scope take ring 0) takes one slot of ring
min(d, 3)'s task window and one entry of its dependency
pool per predecessor; a scratch tensor (`alloc_tensor`) takes its bytes from its scope's
ring's heap.  Each ring frees them first in, first out: a slot (and its entries) once its
task finished, the consumers that waited on it finished and its scope closed; heap bytes
once their scope closed and every task submitted before the close finished.  A dispatch
or allocation that does not fit waits (the orchestration runs ready tasks meanwhile); one
that can never fit (larger than the ring, or what holds the ring belongs to a scope still
open, which only the waiting orchestration could close) stops the run with an error that
names the ring, the resource and what to raise.

`RunConfig(ring_task_window=, ring_heap=, ring_dep_pool=)` size them: a scalar for all four
rings or a list of exactly four, a 0 entry (or None) keeping the default, which
`PTO2_RING_TASK_WINDOW` / `PTO2_RING_HEAP` / `PTO2_RING_DEP_POOL` override.  The defaults
are far above upstream's (16384 slots, 256 MiB, 16384 entries per ring), so that every
program written before the rings existed runs unchanged (a flat body's tasks all stay in
ring 0's window until the orchestration returns); the heap is accounting only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RINGS = 4

INT32_MAX = 2**31 - 1

RESOURCES = ("task_window", "heap", "dep_pool")
"""The three resources of a ring, in the order the native scheduler numbers them."""

DEFAULTS = {"task_window": 1 << 20, "heap": 1 << 40, "dep_pool": 1 << 26}
"""Per ring: task slots, heap bytes, dependency entries."""

DEFAULT_RINGS = {resource: (size,) * RINGS for resource, size in DEFAULTS.items()}
"""Every ring at its default (what a run gets without a RunConfig's sizes)."""

ENV = {"task_window": "PTO2_RING_TASK_WINDOW", "heap": "PTO2_RING_HEAP",
       "dep_pool": "PTO2_RING_DEP_POOL"}

_UNITS = {"task_window": "in-flight task slots", "heap": "bytes of scratch tensors",
          "dep_pool": "dependency-edge entries"}


def _check_entry(resource: str, value: int, where: str) -> None:
    """Upstream's per-entry constraints (0 is the default, checked by the caller)."""
    if resource == "task_window":
        ok = value >= 4 and value & (value - 1) == 0
        rule = "a power of two >= 4"
    elif resource == "heap":
        ok = value >= 1024 and value & (value - 1) == 0
        rule = "a power of two >= 1024 (bytes)"
    else:
        ok = 4 <= value <= INT32_MAX
        rule = f"in [4, {INT32_MAX}]"
    if not ok:
        raise ValueError(f"{where}: each ring's {resource} must be {rule} (0 keeps the "
                         f"default), got {value}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def resolve(resource: str, value: Any) -> tuple[int, ...]:
    """`RunConfig(ring_<resource>=value)` as four per-ring capacities."""
    name = f"ring_{resource}"
    default = DEFAULTS[resource]
    env = os.environ.get(ENV[resource])
    if env:
        try:
            default = int(env, 0)
        except ValueError:
            raise ValueError(f"{ENV[resource]}={env!r}: expected an integer") from None
        _check_entry(resource, default, ENV[resource])
    if value is None:
        return (default,) * RINGS
    if _is_int(value):
        entries: Sequence[Any] = [value] * RINGS
    elif isinstance(value, (list, tuple)) and len(value) == RINGS \
            and all(_is_int(v) for v in value):
        entries = value
    else:
        raise ValueError(f"{name} takes an int (every ring) or a list of exactly {RINGS} ints "
                         f"(rings 0..3), got {value!r}")
    out = []
    for entry in entries:
        if entry == 0:
            out.append(default)
        else:
            _check_entry(resource, entry, f"{name}={value!r}")
            out.append(entry)
    return tuple(out)


def ring_overflow(resource: int, ring: int, needed: int, capacity: int, held: bool,
                  kernel: str | None) -> str:
    """The message of a ring resource a dispatch (`kernel`) or an allocation can never get.
    `held`: it would fit, but what holds the ring belongs to a scope still open."""
    name = RESOURCES[resource]
    who = f"dispatch of {kernel!r}" if kernel else "alloc_tensor"
    if held:
        why = ("the ring is full of what scopes still open hold (the orchestration waits "
               "for nothing that could free it)")
    else:
        why = "more than the ring holds"
    advice = {
        "task_window": "raise ring_task_window (PTO2_RING_TASK_WINDOW) or split the scope so "
                       "slots are reclaimed sooner",
        "heap": "raise ring_heap (PTO2_RING_HEAP) or split the scope so its scratch tensors "
                "are reclaimed sooner",
        "dep_pool": "raise ring_dep_pool (PTO2_RING_DEP_POOL) or split the scope so entries "
                    "are reclaimed sooner",
    }[name]
    return (f"ring {ring} {name} overflow: the {who} needs {needed} {_UNITS[name]}, the ring "
            f"has {capacity}: {why}; {advice} (RunConfig(enable_scope_stats=True) shows "
            "which scope peaked)")


def write_scope_stats(directory: Path, capacities: dict[str, tuple[int, ...]],
                      scopes: Sequence[Any]) -> Path:
    """`<directory>/scope_stats/scope_stats.jsonl`: line 1 the run's ring capacities, then
    one line per scope (native `PnrScope` records, in the order they opened)."""
    out = directory / "scope_stats"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "scope_stats.jsonl"
    lines = [json.dumps({"kind": "run", "rings": RINGS,
                         **{f"{r}_max": list(capacities[r]) for r in RESOURCES}})]
    for index, s in enumerate(scopes):
        lines.append(json.dumps({
            "kind": "scope", "scope": index, "depth": s.depth, "ring": s.ring,
            "first_task": s.first_task, "tasks": s.tasks,
            "task_window_peak": s.task_window_peak, "heap_peak": s.heap_peak,
            "dep_pool_peak": s.dep_pool_peak}))
    path.write_text("\n".join(lines) + "\n")
    return path


__all__ = ["DEFAULTS", "ENV", "RESOURCES", "RINGS", "resolve", "ring_overflow",
           "write_scope_stats"]
