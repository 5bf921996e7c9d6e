"""ctypes mirror of pypto/sim/include/pto/abi.h, the artifact ABI.

Every layout here must match the header byte for byte; tests/runtime/test_abi_layout.py
compiles a C probe and compares sizes and offsets.  `ABI_VERSION` is read from the
header itself (`pypto.sim`).
"""

from __future__ import annotations

import ctypes
import enum

from pypto.sim import ABI_VERSION as ABI_VERSION  # the loader refuses artifacts of another

MAX_RANK = 4
"""`PTO_MAX_RANK`: the most dimensions a tensor argument can have."""


class ArgKind(enum.IntEnum):
    """`PtoArgKind`: what a `PtoArg` carries."""

    TENSOR = 0
    INT = 1
    FLOAT = 2


class Direction(enum.IntEnum):
    """`PtoDirection`: how a task uses a tensor argument (drives dependency inference).

    `ACCUM` is an atomic-add-only access: it commutes with other accumulators.
    """

    IN = 0
    OUT = 1
    INOUT = 2
    ACCUM = 3

    @classmethod
    def from_manifest(cls, text: str) -> Direction:
        """`"in"` / `"out"` / `"inout"` (the manifest spelling) → Direction."""
        return cls[text.upper()]

    @property
    def reads(self) -> bool:
        """True when the task reads the tensor's previous contents."""
        return self is not Direction.OUT

    @property
    def writes(self) -> bool:
        """True when the task writes the tensor."""
        return self is not Direction.IN


NO_DEP = 0x100
"""`PTO_NO_DEP`: OR-ed into a direction, opts the argument out of dependency inference."""

DUMP = 0x200
"""`PTO_DUMP`: OR-ed into a direction, marks the argument for tensor dumps
(`pl.dump_tag` / `dumps=`; taken when `RunConfig(enable_dump_args=1)`)."""

DIRECTION_MASK = 0xFF
"""`PTO_DIRECTION_MASK`: the direction bits of `PtoArg.direction`."""

TASK_EARLY_RESOLVE = 0x1
"""`PTO_TASK_EARLY_RESOLVE`: a `dispatch` flag (`allow_early_resolve=True`): the task's
consumers whose predecessors all carry it start the moment the last one ends, ahead of
tasks that became ready earlier (a scheduling hint, no effect on results)."""

TASK_GANG = 0x2
"""`PTO_TASK_GANG`: a `dispatch` flag (a kernel with a `pl.system.syncall`): the kernel runs
every block of the dispatch itself, at once; the runtime calls it once, as block 0 of
`blocks`, on one core, and records all the dispatch's tasks as run by that call."""


class PtoTensor(ctypes.Structure):
    """A view of global memory; strides are in elements."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("shape", ctypes.c_int64 * MAX_RANK),
        ("stride", ctypes.c_int64 * MAX_RANK),
        ("ndim", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
    ]


class PtoArg(ctypes.Structure):
    """One kernel or orchestration argument: a tensor, an int or a float."""

    _fields_ = [
        ("kind", ctypes.c_int32),
        ("direction", ctypes.c_int32),
        ("tensor", PtoTensor),
        ("i", ctypes.c_int64),
        ("f", ctypes.c_double),
    ]


class PtoCore(ctypes.Structure):
    """One simulated core: pointers to its on-chip buffers, its id and the running block."""

    _fields_ = [
        ("vec", ctypes.POINTER(ctypes.c_uint8)),
        ("mat", ctypes.POINTER(ctypes.c_uint8)),
        ("left", ctypes.POINTER(ctypes.c_uint8)),
        ("right", ctypes.POINTER(ctypes.c_uint8)),
        ("acc", ctypes.POINTER(ctypes.c_uint8)),
        ("bias", ctypes.POINTER(ctypes.c_uint8)),
        ("left_scale", ctypes.POINTER(ctypes.c_uint8)),
        ("right_scale", ctypes.POINTER(ctypes.c_uint8)),
        ("core_id", ctypes.c_int32),
        ("block_idx", ctypes.c_int32),
        ("block_num", ctypes.c_int32),
    ]


class PtoTaskIds(ctypes.Structure):
    """Tasks `first .. first + count - 1`: what one dispatch submitted."""

    _fields_ = [("first", ctypes.c_int64), ("count", ctypes.c_int64)]


_TASK_PARAMS = (ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(PtoArg),
                ctypes.c_int32)
"""The parameters `submit` and `dispatch` begin with: (ctx, kernel_index, nargs, args,
ndeps)."""

SubmitFn = ctypes.CFUNCTYPE(ctypes.c_int64, *_TASK_PARAMS, ctypes.POINTER(ctypes.c_int64))
"""`PtoRuntimeApi.submit`: (ctx, kernel_index, nargs, args, ndeps, deps) → task id or < 0."""

AllocTensorFn = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(PtoTensor), ctypes.c_char_p
)
"""`PtoRuntimeApi.alloc_tensor`: (ctx, tensor, name or NULL) → 0 on success."""

DispatchFn = ctypes.CFUNCTYPE(ctypes.c_int64, *_TASK_PARAMS, ctypes.POINTER(PtoTaskIds),
                              ctypes.c_int64, ctypes.c_int32)
"""`PtoRuntimeApi.dispatch`: (ctx, kernel_index, nargs, args, ndeps, dep ranges, blocks,
flags) → first task id or < 0."""

ScopeFn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
"""`PtoRuntimeApi.scope_begin` / `scope_end`: (ctx) → 0 on success."""


class PtoRuntimeApi(ctypes.Structure):
    """The services the runtime offers to orchestration code."""

    _fields_ = [
        ("ctx", ctypes.c_void_p),
        ("submit", SubmitFn),
        ("alloc_tensor", AllocTensorFn),
        ("dispatch", DispatchFn),
        ("scope_begin", ScopeFn),
        ("scope_end", ScopeFn),
    ]


PtoKernelFn = ctypes.CFUNCTYPE(None, ctypes.POINTER(PtoCore), ctypes.POINTER(PtoArg))
"""Exported by each kernel shared object under the kernel's name."""

PtoOrchestrateFn = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.POINTER(PtoRuntimeApi), ctypes.POINTER(PtoArg)
)
"""Exported by the orchestration shared object: (api, params) → 0 on success."""
