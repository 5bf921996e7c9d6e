"""What a task's arguments can touch: a `PtoArg` array decoded into the byte ranges
(`scheduler.Access`) the scheduler orders tasks by.  The Python scheduler decodes each
submission; a native run's task records are decoded the same way afterwards."""

from __future__ import annotations

import ctypes
import struct
from typing import TYPE_CHECKING

from pypto.runtime.abi import DIRECTION_MASK, DUMP, MAX_RANK, NO_DEP, ArgKind, Direction, PtoArg
from pypto.runtime.errors import OrchestrationError
from pypto.runtime.memory import BITS_BY_CODE, element_bytes
from pypto.runtime.scheduler import Access

if TYPE_CHECKING:
    from pypto.runtime.manifest import KernelSpec

_TENSOR = int(ArgKind.TENSOR)
_DIRECTIONS = {int(d): d for d in Direction}

# A PtoArg's fields in order: kind, direction, tensor (data, shape[4], stride[4], ndim,
# dtype), i, f.  Unpacking the bytes is several times cheaper than reading ctypes fields.
ARG_STRUCT = struct.Struct(f"=iiQ{MAX_RANK}q{MAX_RANK}qiiqd")
"""The layout of one `PtoArg`, for unpacking an array of them from its bytes."""
assert ARG_STRUCT.size == ctypes.sizeof(PtoArg) and PtoArg.i.offset == ARG_STRUCT.size - 16


def decode_accesses(spec: KernelSpec, raw: bytes, contains=None) -> list[Access]:
    """The device bytes each tensor argument (`raw`: a PtoArg array's bytes) can touch;
    with `contains`, refuses a view outside device memory."""
    accesses = []
    signature = spec.signature
    for position, arg in enumerate(ARG_STRUCT.iter_unpack(raw)):
        is_tensor = arg[0] == _TENSOR
        if is_tensor != signature[position].is_tensor:
            raise _invalid_arg(spec, position, f"expected a {signature[position].kind}")
        if not is_tensor:
            continue
        flags, ndim, dtype = arg[1], arg[11], arg[12]
        direction = _DIRECTIONS.get(flags & DIRECTION_MASK)
        if (
            direction is None
            or flags & ~(DIRECTION_MASK | NO_DEP | DUMP)
            or not 0 <= ndim <= MAX_RANK
        ):
            raise _invalid_arg(spec, position, f"direction {flags:#x}, ndim {ndim}")
        if dtype not in BITS_BY_CODE:
            raise _invalid_arg(spec, position, f"dtype code {dtype}")
        start, end = _byte_range(arg, ndim, BITS_BY_CODE[dtype])
        if start == end:
            continue
        if contains is not None and not contains(start, end):
            raise _invalid_arg(
                spec, position, f"the view [{start:#x}, {end:#x}) lies outside device memory"
            )
        accesses.append(Access(start, end, direction, not flags & NO_DEP, position))
    return accesses


def _byte_range(arg: tuple, ndim: int, bits: int) -> tuple[int, int]:
    """`memory.byte_range` of an unpacked PtoArg: bytes [start, end) its view can touch."""
    low = high = 0
    for d in range(ndim):
        extent = arg[3 + d]
        if extent <= 0:
            return 0, 0
        span = arg[3 + MAX_RANK + d] * (extent - 1)
        if span < 0:
            low += span
        else:
            high += span
    base = arg[2]
    start, end = element_bytes(bits, low, high)
    return base + start, base + end


def _invalid_arg(spec: KernelSpec, position: int, problem: str) -> OrchestrationError:
    name = spec.signature[position].name
    return OrchestrationError(
        f"submit: kernel {spec.name!r} argument {position} ({name!r}) is invalid: {problem}"
    )
