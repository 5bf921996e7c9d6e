"""DFX outputs of a run: the dependency graph (deps.json) and the swimlane (swimlane.json).

Both go under `<work_dir>/dfx_outputs/`, where work_dir is `$PYPTO_WORK_DIR` when set,
else the current working directory of the process that runs the kernel: the artifact
directory is immutable and shared by every run, so run outputs never go there.  Each
run overwrites the files of the previous one; files are replaced atomically.

deps.json (`"format": "pypto.deps/1"`)::

    {"format", "entry", "platform", "complete",
     "tasks":   [{"id", "kernel", "kernel_index", "block": [idx, num] | null,
                  "core", "args": [{"name", "kind": "tensor", "direction": "in|out|inout|accum",
                                    "tracked", "tensor": <tensor id>, "offset": <element>,
                                    "shape": [...]} | {"name", "kind": "scalar", "value"}]}],
     "tensors": [{"id", "name", "origin": "param|scratch|resident", "dtype", "shape", "nbytes"}],
     "edges":   [{"src", "dst", "source": "tensormap|explicit", "kind": "RAW|WAW|null",
                  "tensor": <tensor id of the overlap> | null}]}

swimlane.json is Chrome trace event format (opens in Perfetto / chrome://tracing): one
complete event ("ph": "X") per task on the lane (tid) of the simulated core that ran
it, timestamps in microseconds since the run began, and one flow arrow ("s" → "f") per
edge from the producer's slice to the consumer's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto.filesystem import atomic_write
from pypto.runtime.abi import DIRECTION_MASK, NO_DEP, ArgKind, Direction
from pypto.runtime.memory import BITS_BY_CODE

if TYPE_CHECKING:
    from pypto.runtime.execution import ProgramRun

WORK_DIR_ENV = "PYPTO_WORK_DIR"
DEPS_FORMAT = "pypto.deps/1"


def work_dir() -> Path:
    """`$PYPTO_WORK_DIR` if set, else the current working directory."""
    return Path(os.environ.get(WORK_DIR_ENV) or os.getcwd())


def dfx_dir() -> Path:
    """`<work_dir>/dfx_outputs`: where every DFX output of a run goes."""
    return work_dir() / "dfx_outputs"


def write_json(path: Path, document: Any) -> Path:
    """Writes `document` to `path` atomically (`pypto.filesystem`'s rule: a reader never
    sees half a file)."""
    return atomic_write(path, json.dumps(document, indent=1) + "\n")


def deps_document(run: ProgramRun) -> dict:
    """The dependency graph of a run (see the module docstring for the format)."""
    manifest = run.program.manifest
    memory = run.memory
    scheduler = run.scheduler
    kernel_index = {k.name: i for i, k in enumerate(manifest.kernels)}
    signatures = {k.name: k.signature for k in manifest.kernels}
    tasks = []
    for task in scheduler.tasks:
        signature = signatures.get(task.kernel_name, ())
        tasks.append({
            "id": task.task_id,
            "kernel": task.kernel_name,
            "kernel_index": kernel_index.get(task.kernel_name),
            "block": [task.block_idx, task.block_num] if task.block_num != 1 else None,
            "core": task.core_id,
            "ring": task.ring,
            "allow_early_resolve": task.early_resolve,
            "pre_staged": task.staged,
            "args": [_arg(memory, arg, signature[i].name if i < len(signature) else str(i))
                     for i, arg in enumerate(task.args)],
        })
    tensors = [
        {"id": r.tensor_id, "name": r.name, "origin": r.origin, "dtype": r.dtype.name,
         "shape": list(r.shape), "nbytes": r.end - r.start}
        for r in memory.records
    ]
    edges = []
    for edge in scheduler.edges:
        tensor = None
        if edge.source == "tensormap":
            tensor = _overlap_tensor(run, scheduler.tasks[edge.src], scheduler.tasks[edge.dst])
        edges.append({"src": edge.src, "dst": edge.dst, "source": edge.source,
                      "kind": edge.kind, "tensor": tensor})
    complete = all(t.end_ns is not None for t in scheduler.tasks)
    return {
        "format": DEPS_FORMAT,
        "entry": manifest.entry,
        "platform": manifest.platform,
        "complete": complete,
        "tasks": tasks,
        "tensors": tensors,
        "edges": edges,
    }


def _arg(memory, arg, name: str) -> dict:
    if arg.kind != ArgKind.TENSOR:
        value = arg.f if arg.kind == ArgKind.FLOAT else arg.i
        return {"name": name, "kind": "scalar", "value": value}
    tensor = arg.tensor
    address = tensor.data or 0
    record = memory.record_at(address)
    bits = BITS_BY_CODE.get(tensor.dtype, 8)
    direction = Direction(arg.direction & DIRECTION_MASK)
    return {
        "name": name,
        "kind": "tensor",
        "direction": direction.name.lower(),
        "tracked": not arg.direction & NO_DEP,
        "tensor": record.tensor_id if record else None,
        "offset": (address - record.start) * 8 // bits if record else None,
        "shape": list(tensor.shape[: tensor.ndim]),
    }


def _overlap_tensor(run, src, dst) -> int | None:
    """The tensor through which `dst` depends on `src`: a write of src overlapping dst."""
    for written in src.accesses:
        if written.direction is Direction.IN:
            continue
        for access in dst.accesses:
            if access.start < written.end and written.start < access.end:
                record = run.memory.record_at(max(access.start, written.start))
                return record.tensor_id if record else None
    return None


def _chip(config, platform: str) -> str:
    """The chip a run is on: its platform, the device it simulates, its device id."""
    name = platform
    if config.simulated_device is not None:
        name += f" (simulating {config.simulated_device})"
    if config.device_id is not None:
        name += f" device {config.device_id}"
    return name


def swimlane_document(run: ProgramRun) -> dict:
    """The run's tasks as Chrome trace events: one lane per simulated core, flows for edges."""
    scheduler = run.scheduler
    origin = scheduler.created_ns
    manifest = run.program.manifest
    events: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": 0, "tid": 0,
         "args": {"name": f"{manifest.entry} on {_chip(run.config, manifest.platform)}"}},
    ]
    for core in scheduler.cores:
        events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": core.core_id,
                       "args": {"name": f"core {core.core_id}"}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": core.core_id,
                       "args": {"sort_index": core.core_id}})
    ran = [t for t in scheduler.tasks if t.start_ns is not None and t.end_ns is not None]
    for task in ran:
        args = {"task": task.task_id, "predecessors": list(task.predecessors)}
        if task.block_num != 1:
            args["block"] = [task.block_idx, task.block_num]
        if task.early_resolve:
            args["allow_early_resolve"] = True
        if task.staged:
            args["pre_staged"] = True
        events.append({
            "name": task.kernel_name, "cat": "task", "ph": "X", "pid": 0, "tid": task.core_id,
            "ts": (task.start_ns - origin) / 1000, "dur": (task.end_ns - task.start_ns) / 1000,
            "args": args,
        })
    tasks = scheduler.tasks
    for number, edge in enumerate(scheduler.edges):
        src, dst = tasks[edge.src], tasks[edge.dst]
        if src.start_ns is None or dst.start_ns is None:
            continue
        kind = edge.kind or edge.source
        # A flow starts inside the producer's slice and binds to the consumer's slice.
        events.append({"name": kind, "cat": edge.source, "ph": "s", "id": number, "pid": 0,
                       "tid": src.core_id, "ts": (src.start_ns - origin) / 1000})
        events.append({"name": kind, "cat": edge.source, "ph": "f", "bp": "e", "id": number,
                       "pid": 0, "tid": dst.core_id, "ts": (dst.start_ns - origin) / 1000})
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def write_deps(run: ProgramRun) -> Path:
    """Writes `<work_dir>/dfx_outputs/deps.json` for `run`; returns its path."""
    return write_json(dfx_dir() / "deps.json", deps_document(run))


def write_swimlane(run: ProgramRun) -> Path:
    """Writes `<work_dir>/dfx_outputs/swimlane.json` for `run`; returns its path."""
    return write_json(dfx_dir() / "swimlane.json", swimlane_document(run))
