"""Tensor dumps of a run (`RunConfig(enable_dump_args=1|2)`): the collector and its files.

Level 1 dumps the tensor arguments tagged with `pl.dump_tag(t)` or `pl.at(..., dumps=[t])`
(the `PTO_DUMP` bit of `PtoArg.direction`); level 2 dumps every tensor argument of every
task.  Inputs are copied on the worker thread right before the kernel is called, outputs
right after it returns, so each snapshot is what that task saw or left even while other
tasks run concurrently.  An In argument is dumped before ("input"), an Out argument after
("output"), an InOut or accumulating argument both ("inout").

Files, under `<work_dir>/dfx_outputs/args_dump/` (work_dir as in `pypto.runtime.dfx`),
replaced atomically by every run:

- `args.bin`: the payloads back to back, each the view's elements in logical row-major
  order, little-endian, in the view's dtype;
- `args_dump.json` (`"format": "pypto.args_dump/1"`)::

    {"format", "entry", "platform", "level", "complete", "bin_file": "args.bin",
     "byteorder": "little", "layout": "row-major",
     "budget_bytes", "written_bytes", "truncated_records", "dropped_records",
     "dropped_bytes",
     "records": [{"index", "task", "kernel", "kernel_index", "block": [idx, num] | null,
                  "core", "arg", "name", "direction": "in|out|inout|accum",
                  "role": "input|output|inout", "stage": "before|after",
                  "tensor": <buffer name> | null, "dtype", "shape", "strides",
                  "offset": <element offset of the view in its buffer> | null,
                  "offsets": <the same per dimension of the buffer> | null,
                  "nbytes", "bin_offset", "bin_size", "truncated"}]}

  Records are sorted by (task, stage, arg); `index` is the position in that order.

The collector has a byte budget for `args.bin` (`$PYPTO_DUMP_BUDGET`: bytes, with an
optional K/M/G suffix; default 256M).  The record that crosses it keeps the whole
elements that fit and is marked `truncated`; every later one is dropped (never copied)
and only counted.  Nothing waits for disk space or a reader, so a dump cannot hang a
run; a run that truncated or dropped anything ends with an `ArgsDumpWarning`.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto.filesystem import AtomicFile
from pypto.ir import dtypes
from pypto.runtime.abi import DIRECTION_MASK, DUMP, ArgKind, Direction
from pypto.runtime.memory import BITS_BY_CODE, row_major_strides

if TYPE_CHECKING:
    from pypto.runtime.execution import ProgramRun
    from pypto.runtime.manifest import KernelSpec

ARGS_DUMP_FORMAT = "pypto.args_dump/1"
MANIFEST_NAME = "args_dump.json"
BIN_NAME = "args.bin"
BUDGET_ENV = "PYPTO_DUMP_BUDGET"
DEFAULT_BUDGET = 256 << 20
STAGES = ("before", "after")
ROLES = ("input", "output", "inout")

_TENSOR = int(ArgKind.TENSOR)
_ROLE = {Direction.IN: "input", Direction.OUT: "output", Direction.INOUT: "inout",
         Direction.ACCUM: "inout"}
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


class ArgsDumpWarning(UserWarning):
    """A tensor dump is incomplete: its byte budget ran out, or nothing was tagged."""


def dump_budget() -> int:
    """The byte budget of a run's `args.bin`: `$PYPTO_DUMP_BUDGET` (e.g. `4096`, `64M`),
    else 256 MiB."""
    text = os.environ.get(BUDGET_ENV, "").strip().upper().removesuffix("B")
    if not text:
        return DEFAULT_BUDGET
    unit = text[-1] if text[-1] in _UNITS else ""
    try:
        value = float(text[: len(text) - len(unit)])
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{BUDGET_ENV}={os.environ[BUDGET_ENV]!r} is not a byte count: write "
                         "e.g. 4096, 512K, 64M or 1G")
    return int(value * _UNITS[unit])


@dataclass(frozen=True)
class _Planned:
    """One tensor argument of a dispatch to dump, and when."""

    arg: int
    name: str
    direction: Direction
    role: str
    before: bool
    after: bool


class ArgsDumpCollector:
    """Collects one run's dumps into `args.bin` and writes `args_dump.json` at the end.

    `wrap` is called by the submitting thread for each dispatch; the wrapped kernels take
    the snapshots on whatever worker runs them; `finish` runs after every worker stopped.
    """

    def __init__(self, level: int, memory: Any, directory: Path, budget: int,
                 entry: str = "", platform: str = "") -> None:
        if level not in (1, 2):
            raise ValueError(f"enable_dump_args must be 0, 1 or 2, got {level!r}")
        self.level = level
        self.memory = memory
        self.directory = Path(directory)
        self.budget = budget
        self.entry = entry
        self.platform = platform
        self.directory.mkdir(parents=True, exist_ok=True)
        self._bin = AtomicFile(self.directory / BIN_NAME)
        self._file = self._bin.file
        self._lock = threading.Lock()
        self._records: list[dict] = []
        self.written = 0
        self.truncated = 0
        self.dropped = 0
        self.dropped_bytes = 0
        self.exhausted = budget <= 0
        self.planned_any = False
        self._finished = False

    @classmethod
    def for_run(cls, run: ProgramRun) -> ArgsDumpCollector:
        """The collector of `run`, writing under `<work_dir>/dfx_outputs/args_dump/`."""
        from pypto.runtime.dfx import dfx_dir

        manifest = run.program.manifest
        return cls(run.config.enable_dump_args, run.memory, dfx_dir() / "args_dump",
                   dump_budget(), manifest.entry, manifest.platform)

    # ------------------------------------------------------------------ per dispatch
    def plan(self, spec: KernelSpec, args: Any) -> list[_Planned]:
        """The tensor arguments of one dispatch this level dumps."""
        planned = []
        for position in range(len(spec.signature)):
            arg = args[position]
            if arg.kind != _TENSOR or (self.level == 1 and not arg.direction & DUMP):
                continue
            direction = Direction(arg.direction & DIRECTION_MASK)
            role = _ROLE[direction]
            planned.append(_Planned(position, spec.signature[position].name, direction, role,
                                    role != "output", role != "input"))
        return planned

    def wrap(self, kernel: Callable, first_task: int, kernel_index: int, spec: KernelSpec,
             args: Any) -> Callable:
        """`kernel`, or a function that dumps its planned arguments around each call.

        `first_task` is the id the scheduler gives the dispatch's first block."""
        planned = self.plan(spec, args)
        if not planned:
            return kernel
        self.planned_any = True
        before = [p for p in planned if p.before]
        after = [p for p in planned if p.after]
        name = spec.name

        def dumping_kernel(core, kernel_args):
            state = core.contents
            where = (first_task + state.block_idx, name, kernel_index,
                     [state.block_idx, state.block_num] if state.block_num != 1 else None,
                     state.core_id)
            for p in before:
                self._capture(where, p, "before", kernel_args[p.arg].tensor)
            kernel(core, kernel_args)
            for p in after:
                self._capture(where, p, "after", kernel_args[p.arg].tensor)

        return dumping_kernel

    # ------------------------------------------------------------------ snapshots
    def _capture(self, where: tuple, planned: _Planned, stage: str, tensor: Any) -> None:
        dtype = dtypes.from_code(tensor.dtype)
        # A 4-bit type is dumped as its bytes (two elements each), whole bytes at a time.
        bits = BITS_BY_CODE[tensor.dtype]
        unit = max(bits // 8, 1)
        shape = [int(d) for d in tensor.shape[: tensor.ndim]]
        strides = [int(s) for s in tensor.stride[: tensor.ndim]]
        nbytes = dtype.nbytes(math.prod(shape))
        if self.exhausted:  # no copy once the budget is gone: a dropped record costs nothing
            with self._lock:
                self.dropped += 1
                self.dropped_bytes += nbytes
            return
        address = tensor.data or 0
        record = self.memory.record_at(address) if nbytes else None
        payload = self._snapshot(record, address, dtype, shape, strides) if nbytes else b""
        offset = offsets = None
        if record is not None:
            offset = (address - record.start) * 8 // bits
            offsets = _unravel(offset, record.shape) if record.dtype == dtype else None
        task, kernel, kernel_index, block, core = where
        entry = {
            "task": task, "kernel": kernel, "kernel_index": kernel_index, "block": block,
            "core": core, "arg": planned.arg, "name": planned.name,
            "direction": planned.direction.name.lower(), "role": planned.role, "stage": stage,
            "tensor": record.name if record is not None else None, "dtype": dtype.name,
            "shape": shape, "strides": strides, "offset": offset, "offsets": offsets,
            "nbytes": nbytes,
        }
        with self._lock:
            keep = nbytes
            if self.written + nbytes > self.budget:
                self.exhausted = True
                keep = max(self.budget - self.written, 0) // unit * unit
                if keep == 0 and nbytes:
                    self.dropped += 1
                    self.dropped_bytes += nbytes
                    return
                self.truncated += 1
            entry.update(bin_offset=self.written, bin_size=keep, truncated=keep < nbytes)
            self._file.write(payload[:keep])
            self.written += keep
            self._records.append(entry)

    def _snapshot(self, record: Any, address: int, dtype: Any, shape: Sequence[int],
                  strides: Sequence[int]) -> bytes:
        """The view's elements, copied now, as row-major little-endian bytes."""
        import torch

        if record is None:
            raise ValueError(f"a dumped view at {address:#x} lies outside device memory")
        buffer = self.memory.buffers[record.tensor_id]
        if dtype.packed:  # the view's bytes: element strides and offset halve
            elements = buffer.reshape(-1).view(torch.uint8)
            offset = address - record.start
            shape, strides = dtype.torch_shape(shape), [*(s // 2 for s in strides[:-1]), 1]
        else:
            elements = buffer.reshape(-1).view(torch.uint8).view(dtype.to_torch())
            offset = (address - record.start) // dtype.itemsize
        view = torch.as_strided(elements, tuple(shape), tuple(strides),
                                elements.storage_offset() + offset)
        data = view.contiguous().clone().reshape(-1).view(torch.uint8).numpy()
        if sys.byteorder != "little" and dtype.bits > 8:
            data = data.reshape(-1, dtype.itemsize)[:, ::-1]
        return data.tobytes()

    # ------------------------------------------------------------------ the end
    def finish(self, complete: bool) -> Path | None:
        """Publishes `args.bin` and `args_dump.json` (every worker must have stopped);
        warns when records were truncated or dropped.  Returns the manifest's path."""
        if self._finished:
            return None
        self._finished = True
        from pypto.runtime.dfx import write_json

        self._bin.commit()
        order = {stage: i for i, stage in enumerate(STAGES)}
        records = sorted(self._records, key=lambda r: (r["task"], order[r["stage"]], r["arg"]))
        for index, record in enumerate(records):
            record["index"] = index
        document = {
            "format": ARGS_DUMP_FORMAT, "entry": self.entry, "platform": self.platform,
            "level": self.level, "complete": complete, "bin_file": BIN_NAME,
            "byteorder": "little", "layout": "row-major", "budget_bytes": self.budget,
            "written_bytes": self.written, "truncated_records": self.truncated,
            "dropped_records": self.dropped, "dropped_bytes": self.dropped_bytes,
            "records": [{"index": r.pop("index"), **r} for r in records],
        }
        path = write_json(self.directory / MANIFEST_NAME, document)
        if self.truncated or self.dropped:
            warnings.warn(ArgsDumpWarning(
                f"the tensor dump of `{self.entry}` ran out of its {self.budget}-byte budget: "
                f"{self.truncated} record(s) truncated, {self.dropped} dropped "
                f"({self.dropped_bytes} bytes not written); see {path}. Raise {BUDGET_ENV} "
                "or dump less: enable_dump_args=1 with pl.dump_tag(t) on the tensors you need"
            ), stacklevel=2)
        elif self.level == 1 and not self.planned_any:
            warnings.warn(ArgsDumpWarning(
                f"enable_dump_args=1 dumped nothing: no task of `{self.entry}` takes a tagged "
                "tensor; tag one with pl.dump_tag(t) or pl.at(..., dumps=[t]), or use "
                "enable_dump_args=2 to dump every task"
            ), stacklevel=2)
        return path


def _unravel(offset: int, shape: Sequence[int]) -> list[int]:
    """Element `offset` of a row-major buffer of `shape` as one index per dimension."""
    index = []
    for stride in row_major_strides(shape):
        index.append(offset // stride if stride else 0)
        offset = offset % stride if stride else offset
    return index


# ----------------------------------------------------------------------------- reading


class ArgsDumpError(ValueError):
    """The input is not a readable pypto args dump."""


@dataclass
class ArgsDump:
    """A dump directory read back: the manifest and access to every record's tensor."""

    directory: Path
    manifest: dict

    @classmethod
    def load(cls, path: str | os.PathLike) -> ArgsDump:
        """Reads `args_dump.json` from `path`: that file, its directory, a `dfx_outputs/`
        directory or a work directory holding `dfx_outputs/args_dump/`."""
        path = Path(path)
        candidates = [path] if path.suffix == ".json" else [
            path / MANIFEST_NAME, path / "args_dump" / MANIFEST_NAME,
            path / "dfx_outputs" / "args_dump" / MANIFEST_NAME]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            raise ArgsDumpError(f"{path}: no {MANIFEST_NAME} here (looked in "
                                f"{', '.join(str(c) for c in candidates)}); run with "
                                "RunConfig(enable_dump_args=1|2) first")
        try:
            manifest = json.loads(found.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ArgsDumpError(f"{found}: cannot read: {exc}") from None
        if not isinstance(manifest, dict) or manifest.get("format") != ARGS_DUMP_FORMAT:
            raise ArgsDumpError(f"{found}: not a pypto args dump (no 'format': "
                                f"{ARGS_DUMP_FORMAT!r})")
        return cls(found.parent, manifest)

    @property
    def records(self) -> list[dict]:
        return self.manifest["records"]

    @property
    def bin_path(self) -> Path:
        return self.directory / self.manifest.get("bin_file", BIN_NAME)

    def tensor(self, record: dict) -> Any:
        """The record's values as a torch tensor of its dtype and shape; a truncated record
        gives the elements it kept, flat."""
        import numpy as np
        import torch

        dtype = dtypes.from_name(record["dtype"])
        with open(self.bin_path, "rb") as f:
            f.seek(record["bin_offset"])
            data = f.read(record["bin_size"])
        if len(data) != record["bin_size"]:
            raise ArgsDumpError(f"{self.bin_path}: record {record['index']} needs "
                                f"{record['bin_size']} bytes at {record['bin_offset']}, "
                                f"the file has {len(data)} there")
        raw = torch.from_numpy(np.frombuffer(bytearray(data), dtype=np.uint8))
        if sys.byteorder != "little" and dtype.bits > 8:
            raw = raw.reshape(-1, dtype.itemsize).flip(1).reshape(-1)
        values = raw.view(dtype.to_torch())  # a 4-bit type: its bytes, as its torch tensors
        return values if record["truncated"] else values.reshape(
            dtype.torch_shape(record["shape"]))


__all__ = [
    "ARGS_DUMP_FORMAT",
    "ArgsDump",
    "ArgsDumpCollector",
    "ArgsDumpError",
    "ArgsDumpWarning",
    "BUDGET_ENV",
    "dump_budget",
]
