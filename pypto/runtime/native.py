"""The native scheduler: the runtime's fast path, in C++ (pypto/sim/runtime/scheduler.cpp).

The orchestration's `submit` / `dispatch` / `alloc_tensor` calls go straight to C++,
which infers the same edges as `pypto.runtime.scheduler` and runs kernels on native
worker threads without the GIL; one ctypes call runs a whole program.  The Python
scheduler stays the reference and the instrumented path: `execution.ProgramRun` picks
it when a run needs what only it offers (seeded schedules, the race detector, tensor
dumps, deps.json / swimlane.json, kernels that are Python callables).
`PYPTO_SCHEDULER=python|native|auto` (default auto) overrides the choice; `native`
refuses, naming the reason, a run the native path cannot serve.

The library is part of the runtime, not of an artifact: the package build compiles it
(setup.py, the extension `pypto.runtime._scheduler`; `pip install -e .` too), and the
runtime only loads it, once per process, after checking its version, its struct layouts
and that it was built from the sources beside it.  The runtime never compiles: where no
usable library exists, it warns once (`NativeSchedulerWarning`, naming why) and every run
takes the Python scheduler.
"""

from __future__ import annotations

import ctypes
import os
import threading
import warnings
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto.ir.diagnostics import PyptoWarning
from pypto.resources import native_scheduler, scheduler_digest, scheduler_sources
from pypto.runtime.abi import (
    MAX_RANK,
    TASK_EARLY_RESOLVE,
    TASK_GANG,
    PtoArg,
    PtoKernelFn,
    PtoOrchestrateFn,
)
from pypto.runtime.errors import OrchestrationError, PyptoRuntimeError, orchestration_failed
from pypto.runtime.manifest import ON_CHIP_SPACES

if TYPE_CHECKING:
    from pypto.runtime.loader import LoadedProgram
    from pypto.runtime.manifest import KernelSpec
    from pypto.runtime.memory import SimCore

_VERSION = 8  # PNR_VERSION in the source
DTYPE_CODES = 32  # PNR_DTYPE_CODES: the tables pnr_program_new takes, per dtype code
MODES = ("auto", "native", "python")
"""Values of $PYPTO_SCHEDULER."""
REBUILD = "rebuild pypto (`pip install -e .` in a checkout, or reinstall its wheel)"
"""What to do about a missing or stale native scheduler."""


class NativeSchedulerWarning(PyptoWarning):
    """The native scheduler cannot be used here, so every run takes the (slower) Python
    scheduler; said once per process, with the reason."""


class PnrError(ctypes.Structure):
    """What the native scheduler refused: a code and its numbers (see scheduler.cpp)."""

    _fields_ = [("code", ctypes.c_int32), ("kernel", ctypes.c_int32),
                ("position", ctypes.c_int32), ("pad", ctypes.c_int32),
                ("a", ctypes.c_int64), ("b", ctypes.c_int64),
                ("shape", ctypes.c_int64 * MAX_RANK)]


class PnrTaskRecord(ctypes.Structure):
    """One task as the native scheduler recorded it."""

    _fields_ = [("task_id", ctypes.c_int64), ("kernel", ctypes.c_int32),
                ("core_id", ctypes.c_int32), ("block_idx", ctypes.c_int64),
                ("block_num", ctypes.c_int64), ("group", ctypes.c_int64),
                ("start_ns", ctypes.c_int64), ("end_ns", ctypes.c_int64),
                ("args", ctypes.c_void_p), ("pred_offset", ctypes.c_int64),
                ("pred_count", ctypes.c_int64), ("flags", ctypes.c_int32),
                ("staged", ctypes.c_int32), ("ring", ctypes.c_int32), ("scope", ctypes.c_int32)]


class PnrScope(ctypes.Structure):
    """One runtime scope of a native run (depth -1: the implicit top-level scope): its
    ring, the tasks submitted while it was open, the first one, and its ring's peak task
    slots, heap bytes and dependency entries while it was open."""

    _fields_ = [("depth", ctypes.c_int32), ("ring", ctypes.c_int32),
                ("tasks", ctypes.c_int64), ("first_task", ctypes.c_int64),
                ("task_window_peak", ctypes.c_int64), ("heap_peak", ctypes.c_int64),
                ("dep_pool_peak", ctypes.c_int64)]


class PnrScratch(ctypes.Structure):
    """One `alloc_tensor` of a native run."""

    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("ndim", ctypes.c_int32),
                ("dtype", ctypes.c_int32), ("shape", ctypes.c_int64 * MAX_RANK)]


class PnrEdge(ctypes.Structure):
    """One edge: kind 0 RAW, 1 WAW (inferred), 2 explicit."""

    _fields_ = [("src", ctypes.c_int64), ("dst", ctypes.c_int64),
                ("kind", ctypes.c_int32), ("pad", ctypes.c_int32)]


class PnrCall(ctypes.Structure):
    """One call (`pnr_run`): the orchestration and its parameters, the data movement
    (copies in, poison fills, copies out as flat (dst, src, bytes) / (dst, bytes, dtype)
    triples), the cores, the device buffers ((start, end) pairs), once it ran, the
    native run it made, and the bytes of each on-chip space (ON_CHIP_SPACES order)
    poisoned on each core before the first task the run gives it."""

    _fields_ = [("orchestrate", ctypes.c_void_p), ("params", ctypes.c_void_p),
                ("ncopy_in", ctypes.c_int32), ("nfill", ctypes.c_int32),
                ("ncopy_out", ctypes.c_int32), ("ncores", ctypes.c_int32),
                ("copy_in", ctypes.c_void_p), ("fill", ctypes.c_void_p),
                ("copy_out", ctypes.c_void_p), ("cores", ctypes.c_void_p),
                ("ranges", ctypes.c_void_p), ("nranges", ctypes.c_int64),
                ("run", ctypes.c_void_p), ("on_chip", ctypes.c_uint64 * len(ON_CHIP_SPACES)),
                ("ring_task_window", ctypes.c_int64 * 4), ("ring_heap", ctypes.c_int64 * 4),
                ("ring_dep_pool", ctypes.c_int64 * 4)]


_lock = threading.Lock()
_library: ctypes.CDLL | None = None
_unavailable: str | None = None


# os.environ's own bytes-keyed dict (CPython on POSIX): reading it skips the key
# encoding of os.environ.get, which costs ~1 µs, a tenth of a warm call.
_ENVIRON = getattr(os.environ, "_data", None)
_MODE_KEY = os.fsencode("PYPTO_SCHEDULER")


def mode() -> str:
    """$PYPTO_SCHEDULER: `auto` (default), `native` or `python`."""
    if _ENVIRON is not None and isinstance(_ENVIRON, dict):
        raw = _ENVIRON.get(_MODE_KEY)
        value = os.fsdecode(raw) if raw else "auto"
    else:
        value = os.environ.get("PYPTO_SCHEDULER", "auto") or "auto"
    if value == "auto":
        return value
    if value not in MODES:
        raise ValueError(f"PYPTO_SCHEDULER={value!r}: choose one of {', '.join(MODES)}")
    return value


def library() -> ctypes.CDLL | None:
    """The native scheduler library the package build made; None when there is none or it
    cannot be used (`unavailable_reason()` says why, and a `NativeSchedulerWarning` says
    it once).  Decided once per process."""
    global _library, _unavailable
    if _library is not None or _unavailable is not None:
        return _library
    with _lock:
        if _library is None and _unavailable is None:
            try:
                _library = _load(_installed_library())
            except (OSError, PyptoRuntimeError) as exc:
                _unavailable = str(exc)
                warnings.warn(NativeSchedulerWarning(
                    f"the native scheduler is unavailable, so every run takes the Python "
                    f"scheduler (slower): {_unavailable}"), stacklevel=2)
    return _library


def unavailable_reason() -> str | None:
    """Why the native scheduler cannot run here (None when it can)."""
    library()
    return _unavailable


def _installed_library() -> Path:
    path = native_scheduler()
    if path is None:
        raise PyptoRuntimeError(f"this pypto was installed without it ({REBUILD})")
    return path


def _load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path), mode=os.RTLD_LOCAL)
    p, i32, i64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
    signatures = {
        "pnr_version": (i32, []),
        "pnr_source_digest": (ctypes.c_char_p, []),
        "pnr_sizes": (i32, [i32]),
        "pnr_program_new": (p, [i32, p, p, p, p, p, p]),
        "pnr_program_free": (None, [p]),
        "pnr_run": (i32, [p, p]),
        "pnr_run_status": (i32, [p]),
        "pnr_run_error": (None, [p, ctypes.POINTER(PnrError)]),
        "pnr_run_task_count": (i64, [p]),
        "pnr_run_edge_count": (i64, [p]),
        "pnr_run_tasks": (None, [p, p]),
        "pnr_run_edges": (None, [p, p]),
        "pnr_run_predecessors": (ctypes.POINTER(i64), [p]),
        "pnr_run_scratch_count": (i64, [p]),
        "pnr_run_scratch": (None, [p, p]),
        "pnr_run_scope_count": (i64, [p]),
        "pnr_run_scopes": (None, [p, p]),
        "pnr_run_free": (None, [p]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    from pypto.runtime.abi import ABI_VERSION

    if lib.pnr_version() != _VERSION * 1000 + ABI_VERSION:
        raise PyptoRuntimeError(f"{path}: native scheduler version {lib.pnr_version()}, "
                                f"expected {_VERSION * 1000 + ABI_VERSION}; {REBUILD}")
    if lib.pnr_source_digest().decode() != scheduler_digest():
        raise PyptoRuntimeError(f"{path} was built from other sources than "
                                f"{scheduler_sources()[0]} ({REBUILD})")
    for which, struct in enumerate((PnrError, PnrTaskRecord, PnrEdge, PnrCall, PnrScratch,
                                    PnrScope)):
        if lib.pnr_sizes(which) != ctypes.sizeof(struct):
            raise PyptoRuntimeError(f"{path}: {struct.__name__} layout differs ({REBUILD})")
    return lib


class NativeProgram:
    """A loaded program as the native scheduler sees it: kernel entry points and, per
    kernel argument, whether it is a tensor.  One per `LoadedProgram` (see `for_program`)."""

    def __init__(self, lib: ctypes.CDLL, program: LoadedProgram, addresses: list[int],
                 orchestrate: int) -> None:
        import torch

        from pypto.ir.dtypes import DataType

        self.lib = lib
        self.kernels = program.kernels
        self.orchestration = program.orchestrate
        self.orchestrate = orchestrate
        """The orchestration entry's address."""
        specs = program.manifest.kernels
        flags = [int(a.is_tensor) for spec in specs for a in spec.signature]
        bits = (ctypes.c_int32 * DTYPE_CODES)()
        is_float = (ctypes.c_int32 * DTYPE_CODES)()
        poison = (ctypes.c_uint8 * (8 * DTYPE_CODES))()
        for dt in DataType:
            bits[dt.code] = dt.bits
            # poisoned as its torch tensor is: HF8's torch.uint8 codes take the integer bytes,
            # and FP4's bytes too (two elements each, no NaN)
            as_float = dt.to_torch().is_floating_point and not dt.packed
            is_float[dt.code] = int(as_float)
            if as_float:
                # The bytes torch's fill_(nan) writes: what DeviceMemory.allocate poisons with.
                nan = torch.full((1,), float("nan"), dtype=dt.to_torch()).view(torch.uint8)
                for k, byte in enumerate(nan.tolist()):
                    poison[8 * dt.code + k] = byte
        self.handle = lib.pnr_program_new(
            len(specs), (ctypes.c_void_p * max(1, len(specs)))(*addresses),
            (ctypes.c_int32 * max(1, len(specs)))(*(len(s.signature) for s in specs)),
            (ctypes.c_uint8 * max(1, len(flags)))(*flags), bits, poison, is_float)
        weakref.finalize(self, lib.pnr_program_free, self.handle)


_programs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def for_program(program: LoadedProgram) -> NativeProgram | str:
    """The program's `NativeProgram`, or why the native scheduler cannot run it."""
    cached = _programs.get(program)
    if (cached is not None and cached.kernels is program.kernels
            and cached.orchestration is program.orchestrate):
        return cached
    lib = library()
    if lib is None:
        return f"the native scheduler is unavailable ({_unavailable})"
    addresses = []
    # The last library is the orchestration's.
    for spec, kernel, binary in zip(program.manifest.kernels, program.kernels,
                                    program._libraries[:-1], strict=True):
        # Only the kernels the artifact exports run natively; a Python callable put in
        # their place (a test's failing kernel) needs the Python scheduler.
        if not isinstance(kernel, PtoKernelFn):
            return f"kernel {spec.name!r} is not the artifact's compiled kernel"
        address = ctypes.cast(kernel, ctypes.c_void_p).value
        try:
            exported = ctypes.cast(binary[spec.name], ctypes.c_void_p).value
        except AttributeError:
            exported = None
        if address is None or address != exported:
            return f"kernel {spec.name!r} is not the artifact's compiled kernel"
        addresses.append(address)
    orchestrate = None
    if isinstance(program.orchestrate, PtoOrchestrateFn):
        orchestrate = ctypes.cast(program.orchestrate, ctypes.c_void_p).value
    if orchestrate is None:
        return "the orchestration is not the artifact's compiled entry"
    native = NativeProgram(lib, program, addresses, orchestrate)
    _programs[program] = native
    return native


class NativeSchedule:
    """What a native run recorded, with the Python `Scheduler`'s reading surface:
    `tasks` (`scheduler.Task`), `edges` (`scheduler.Edge`), `cores`, `created_ns`.
    Tasks and edges are built from the native records on first access."""

    engine = "native"
    seed = None

    def __init__(self, program: LoadedProgram, cores, created_ns: int) -> None:
        self.program = program
        self.cores = cores
        self.created_ns = created_ns
        self._run: tuple[ctypes.CDLL, int] | None = None  # the library and the run handle
        self._tasks: list | None = None
        self._edges: list | None = None

    def attach(self, lib: ctypes.CDLL, handle: int) -> None:
        """Takes ownership of the native run `handle` (freed with this object)."""
        self._run = lib, handle

    def __del__(self) -> None:
        if self._run is not None:
            lib, handle = self._run
            lib.pnr_run_free(handle)
            self._run = None

    @property
    def tasks(self) -> list:
        """Every task in id order, as `scheduler.Task`."""
        if self._tasks is None:
            self._tasks = self._build_tasks()
        return self._tasks

    @property
    def edges(self) -> list:
        """Every edge in the order the Python scheduler records them."""
        if self._edges is None:
            from pypto.runtime.scheduler import Edge

            edges = []
            if self._run is not None:
                lib, handle = self._run
                count = lib.pnr_run_edge_count(handle)
                records = (PnrEdge * count)()
                lib.pnr_run_edges(handle, records)
                kinds = (("tensormap", "RAW"), ("tensormap", "WAW"), ("explicit", None))
                edges = [Edge(e.src, e.dst, *kinds[e.kind]) for e in records]
            self._edges = edges
        return self._edges

    def record_scratch(self, memory) -> None:
        """Registers the run's scratch tensors in `memory` (a `DeviceMemory`), in
        allocation order, as the Python scheduler's `alloc_tensor` does."""
        from pypto.ir import dtypes

        if self._run is None:
            return
        lib, handle = self._run
        count = lib.pnr_run_scratch_count(handle)
        records = (PnrScratch * count)()
        lib.pnr_run_scratch(handle, records)
        for r in records:
            dtype = dtypes.from_code(r.dtype)
            shape = tuple(r.shape[: r.ndim])
            numel = 1
            for extent in shape:
                numel *= extent
            name = r.name.decode("utf-8", "replace") if r.name else None
            memory.record(dtype, shape, r.data or 0, numel * dtype.itemsize, name, "scratch")

    def _build_tasks(self) -> list:
        from pypto.runtime.accesses import decode_accesses
        from pypto.runtime.scheduler import Task

        if self._run is None:
            return []
        lib, handle = self._run
        count = lib.pnr_run_task_count(handle)
        records = (PnrTaskRecord * count)()
        lib.pnr_run_tasks(handle, records)
        predecessors = lib.pnr_run_predecessors(handle)
        specs = self.program.manifest.kernels
        kernels = self.program.kernels
        tasks = []
        group_args: dict[int, tuple] = {}
        for r in records:
            spec = specs[r.kernel]
            shared = group_args.get(r.group)
            if shared is None:
                nargs = len(spec.signature)
                raw = ctypes.string_at(r.args, ctypes.sizeof(PtoArg) * nargs) if nargs else b""
                shared = ((PtoArg * nargs).from_buffer_copy(raw),
                          tuple(decode_accesses(spec, raw)))
                group_args[r.group] = shared
            ran = r.core_id >= 0
            tasks.append(Task(
                r.task_id, spec.name, kernels[r.kernel], shared[0], shared[1],
                tuple(predecessors[r.pred_offset + k] for k in range(r.pred_count)),
                r.block_idx, r.block_num, r.group, r.core_id if ran else None,
                r.start_ns if ran else None, r.end_ns if ran else None,
                bool(r.flags & TASK_EARLY_RESOLVE), bool(r.staged), r.ring,
                bool(r.flags & TASK_GANG)))
        return tasks

    def scopes(self) -> list[PnrScope]:
        """The run's scopes in the order they opened, the implicit top-level one first."""
        if self._run is None:
            return []
        lib, handle = self._run
        records = (PnrScope * lib.pnr_run_scope_count(handle))()
        lib.pnr_run_scopes(handle, records)
        return list(records)


def run_error(lib: ctypes.CDLL, handle: int, program: LoadedProgram) -> OrchestrationError:
    """The error the failed native run `handle` reports, worded as the Python scheduler
    words it."""
    error = PnrError()
    lib.pnr_run_error(handle, ctypes.byref(error))
    manifest = program.manifest
    if error.code == 0:
        return orchestration_failed(manifest, lib.pnr_run_status(handle))
    kernels = manifest.kernels
    spec = kernels[error.kernel] if 0 <= error.kernel < len(kernels) else None
    message = _run_refusal(error, len(kernels), spec)
    if message is None and spec is not None:
        message = _kernel_refusal(error, spec)
    return OrchestrationError(message or
                              f"the native scheduler refused the run (code {error.code})")


def _run_refusal(error: PnrError, nkernels: int, spec: KernelSpec | None) -> str | None:
    """The message of a refusal that is not about one kernel's arguments (codes 1-3, 11-13)."""
    code, a, b = error.code, error.a, error.b
    if code == 1:
        return f"{('submit', 'dispatch')[error.position]}: ndeps must be >= 0, got {a}"
    if code == 2:
        return f"dispatch: dependency range of {a} tasks"
    if code == 3:
        return (f"submit: kernel index {error.kernel} is out of range; "
                f"the artifact has {nkernels} kernels")
    if code == 11:
        shape = list(error.shape[:a]) if 0 <= a <= MAX_RANK else None
        return f"alloc_tensor: invalid request (ndim {a}, dtype code {b}, shape {shape})"
    if code == 12:
        return f"alloc_tensor: cannot allocate {a} bytes of device memory"
    if code == 13:
        what = ("args", "deps")[error.position]
        who = f"kernel {spec.name!r}" if spec is not None else "submit"
        return f"{who}: {what} is a null pointer for {a} entries"
    if code in (14, 15, 16):
        from pypto.runtime.rings import ring_overflow

        return ring_overflow(code - 14, error.position, a, b, bool(error.pad),
                             spec.name if spec is not None else None)
    if code == 17:
        return "scope_end: no runtime scope is open (scope_begin and scope_end must pair)"
    return None


def _kernel_refusal(error: PnrError, spec: KernelSpec) -> str | None:
    """The message of a refusal of a call of kernel `spec` (codes 4-10)."""
    code, a, b, position = error.code, error.a, error.b, error.position
    if code == 4:
        return f"submit: kernel {spec.name!r} takes {len(spec.signature)} arguments, got {a}"
    if code in (5, 6, 7, 8):
        problem = {
            5: lambda: f"expected a {spec.signature[position].kind}",
            6: lambda: f"direction {a:#x}, ndim {b}",
            7: lambda: f"dtype code {a}",
            8: lambda: f"the view [{a:#x}, {b:#x}) lies outside device memory",
        }[code]()
        name = spec.signature[position].name
        return (f"submit: kernel {spec.name!r} argument {position} ({name!r}) is invalid: "
                f"{problem}")
    if code == 9:
        earlier = f"ids 0..{a - 1}" if a else "none yet"
        return (f"task {a} ({spec.name}) depends on task {b}, which has not been submitted; "
                f"a task can only depend on earlier tasks ({earlier})")
    if code == 10:
        return f"{spec.name}: an SPMD dispatch needs blocks >= 0"
    return None


def core_array(cores: Sequence[SimCore]) -> Any:
    """`PtoCore *[]` of `cores`, for `pnr_run_new`."""
    return (ctypes.c_void_p * len(cores))(*(c.address for c in cores))
