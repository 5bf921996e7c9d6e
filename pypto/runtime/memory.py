"""Simulated device memory: global buffers (torch tensors) and per-core on-chip buffers."""

from __future__ import annotations

import ctypes
import mmap
import struct
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from pypto.ir.dtypes import DataType
from pypto.runtime.abi import MAX_RANK, ArgKind, Direction, PtoArg, PtoCore, PtoTensor
from pypto.runtime.manifest import ON_CHIP_SPACES

POISON_BYTE = 0xA5
"""Fill byte of uninitialised integer and bool buffers (floats get NaN)."""

ON_CHIP_POISON_BYTE = 0xFF
"""Fill byte of on-chip memory at the start of every run.  On-chip buffers are untyped,
so one byte serves every tile dtype at any offset: all-ones is NaN in FP32, FP16, BF16,
FP8E4M3FN, FP8E5M2 and FP8E8M0 (as an unwritten Out's NaN) and -1 / all bits set in
integers; in HF8 it is the number -1.5 * 2^-15 (HF8's NaN is 0x80)."""

ON_CHIP_ALIGNMENT = 64
"""Byte alignment of every on-chip buffer, as the device guarantees for its SRAMs."""

def poison_(tensor: torch.Tensor) -> torch.Tensor:
    """Fills `tensor` in place with what uninitialised device memory holds here (NaN in
    floats, POISON_BYTE bytes otherwise: FP4, two elements a byte, has no NaN) and returns
    it: an output no task wrote is then visible instead of accidentally plausible."""
    if tensor.is_floating_point() and tensor.dtype is not torch.float4_e2m1fn_x2:
        return tensor.fill_(float("nan"))
    if tensor.is_contiguous():
        tensor.reshape(-1).view(torch.uint8).fill_(POISON_BYTE)
        return tensor
    block = torch.empty(tensor.shape, dtype=tensor.dtype)
    block.reshape(-1).view(torch.uint8).fill_(POISON_BYTE)
    return tensor.copy_(block)


def as_copyable(tensor: torch.Tensor) -> torch.Tensor:
    """`tensor`, or its bytes where torch cannot copy its elements (float4_e2m1fn_x2, two
    FP4 elements each, which a torch.uint8 tensor may stand for too)."""
    return tensor.view(torch.uint8) if tensor.dtype is torch.float4_e2m1fn_x2 else tensor


BITS_BY_CODE = {dt.code: dt.bits for dt in DataType}
"""Element size in bits for every valid `PtoDType` code (4 for the types packed two to a
byte)."""

ITEMSIZE_BY_CODE = {dt.code: dt.itemsize for dt in DataType if not dt.packed}
"""Element size in bytes for every `PtoDType` code of a byte-sized type."""


def element_bytes(bits: int, low: int, high: int) -> tuple[int, int]:
    """Bytes [start, end) from the start of a buffer holding its elements `low` to `high`
    (inclusive) of `bits` bits each (a 4-bit element shares its byte with its pair)."""
    return low * bits // 8, -(-(high + 1) * bits // 8)


def row_major_strides(shape: Sequence[int]) -> list[int]:
    """Element strides of a contiguous tensor of `shape`."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * max(shape[d + 1], 1)
    return strides


def byte_range(tensor: PtoTensor) -> tuple[int, int]:
    """Bytes [start, end) the view can touch, from its shape and strides; empty views give (0, 0).

    `tensor.dtype` must be a valid code and `tensor.ndim` within 0..MAX_RANK.
    """
    low = high = 0
    for d in range(tensor.ndim):
        extent = tensor.shape[d]
        if extent <= 0:
            return 0, 0
        span = tensor.stride[d] * (extent - 1)
        if span < 0:
            low += span
        else:
            high += span
    start, end = element_bytes(BITS_BY_CODE[tensor.dtype], low, high)
    base = tensor.data or 0
    return base + start, base + end


def describe_tensor(tensor: PtoTensor, buffer: torch.Tensor, dtype: DataType) -> None:
    """Fills `tensor` with the address, shape, row-major strides and dtype of `buffer` (a
    4-bit type's buffer holds two elements a byte: its elements' shape doubles the last
    dimension)."""
    shape = dtype.logical_shape(buffer.shape)
    if len(shape) > MAX_RANK:
        raise ValueError(f"rank {len(shape)} exceeds the ABI's maximum of {MAX_RANK}")
    tensor.data = buffer.data_ptr() or None
    for d, (extent, stride) in enumerate(zip(shape, row_major_strides(shape), strict=True)):
        tensor.shape[d] = extent
        tensor.stride[d] = stride
    tensor.ndim = len(shape)
    tensor.dtype = dtype.code


def tensor_arg(arg: PtoArg, buffer: torch.Tensor, dtype: DataType, direction: Direction) -> None:
    """Fills `arg` as a tensor argument viewing all of `buffer`."""
    arg.kind = ArgKind.TENSOR
    arg.direction = direction
    describe_tensor(arg.tensor, buffer, dtype)


@dataclass(frozen=True)
class TensorRecord:
    """One global-memory buffer of a run, as DFX outputs and diagnostics name it."""

    tensor_id: int
    name: str
    origin: str  # "param" (entry parameter), "scratch" (orchestration), "resident" (ChipWorker)
    dtype: DataType
    shape: tuple[int, ...]
    start: int
    end: int

    def describe(self) -> str:
        """`x` (entry parameter, FP32 [4, 8]) and the like."""
        what = {"param": "entry parameter", "scratch": "scratch tensor",
                "resident": "resident tensor"}.get(self.origin, self.origin)
        return f"`{self.name}` ({what}, {self.dtype.name} {list(self.shape)})"


class DeviceMemory:
    """The global memory of one run: poisoned buffers that stay alive until the run ends.

    Kernels read and write these buffers through raw pointers from worker threads, so
    they must outlive every task; the memory also knows every buffer's address range so
    the runtime can refuse a view that points outside all of them, and names buffers
    for diagnostics and dependency graphs.
    """

    def __init__(self) -> None:
        self.buffers: list[torch.Tensor] = []
        self.records: list[TensorRecord] = []
        """Every buffer in allocation order; a record's `tensor_id` is its index."""
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._by_start: list[TensorRecord] = []

    def allocate(
        self, dtype: DataType, shape: Sequence[int], name: str | None = None,
        origin: str = "scratch",
    ) -> torch.Tensor:
        """A new contiguous buffer filled with poison: NaN for floats, 0xA5 bytes otherwise.

        The device hands out uninitialised memory; poison makes an output that no task
        wrote visible instead of accidentally plausible.
        """
        buffer = poison_(torch.empty(dtype.torch_shape(shape), dtype=dtype.to_torch()))
        self.adopt(buffer, dtype, name, origin)
        return buffer

    def adopt(
        self, buffer: torch.Tensor, dtype: DataType, name: str | None = None,
        origin: str = "resident",
    ) -> TensorRecord:
        """Registers an existing contiguous buffer (a ChipWorker's resident tensor)."""
        self.buffers.append(buffer)
        return self.record(dtype, dtype.logical_shape(buffer.shape), buffer.data_ptr(),
                           buffer.numel() * buffer.element_size(), name, origin)

    def record(
        self, dtype: DataType, shape: tuple[int, ...], start: int, nbytes: int,
        name: str | None = None, origin: str = "scratch",
    ) -> TensorRecord:
        """Registers `nbytes` at `start` that something else keeps alive (the native
        scheduler's buffers, recorded after its run for DFX outputs)."""
        record = TensorRecord(
            len(self.records), name or f"tensor{len(self.records)}", origin, dtype,
            tuple(shape), start, start + nbytes,
        )
        self.records.append(record)
        if nbytes:
            position = bisect_right(self._starts, start)
            self._starts.insert(position, start)
            self._ends.insert(position, record.end)
            self._by_start.insert(position, record)
        return record

    def contains(self, start: int, end: int) -> bool:
        """True when bytes [start, end) lie inside one allocated buffer."""
        position = bisect_right(self._starts, start) - 1
        return position >= 0 and end <= self._ends[position]

    def record_at(self, address: int) -> TensorRecord | None:
        """The buffer holding byte `address`, if any."""
        position = bisect_right(self._starts, address) - 1
        if position >= 0 and address < self._ends[position]:
            return self._by_start[position]
        return None

    def describe(self, start: int, end: int) -> str:
        """Names the buffer holding bytes [start, end) and the elements they cover."""
        record = self.record_at(start)
        if record is None:
            return f"bytes [{start:#x}, {end:#x})"
        bits = record.dtype.bits
        first = (start - record.start) * 8 // bits
        last = -(-(end - record.start) * 8 // bits)
        numel = (record.end - record.start) * 8 // bits
        span = "" if (first, last) == (0, numel) else f" elements [{first}, {last})"
        return f"{record.describe()}{span}"




def core_field(space: str) -> str:
    """The `PtoCore` field of an on-chip space's buffer (`LeftScale`: `left_scale`)."""
    return {"LeftScale": "left_scale", "RightScale": "right_scale"}.get(space, space.lower())


_CORE_FIELDS = struct.Struct(f"={len(ON_CHIP_SPACES)}Q3i")
"""`PtoCore`'s fields, in order (checked against the ctypes layout at import)."""
assert all(getattr(PtoCore, core_field(s)).offset == 8 * i for i, s in enumerate(ON_CHIP_SPACES))
assert PtoCore.block_num.offset + 4 == _CORE_FIELDS.size


class SimCore:
    """One simulated core: 64-byte aligned on-chip buffers and an id.  New buffers read
    zero; every run poisons what its kernels can touch first (`poison`)."""

    def __init__(self, core_id: int, capacities: Mapping[str, int]) -> None:
        self.core_id = core_id
        self.capacities = dict(capacities)
        # One anonymous mapping holds every buffer: the kernel hands out zero pages lazily,
        # so a core costs microseconds however large its buffers (zero-filling ~1 MiB of
        # ctypes arrays cost ~100 µs per core, more than a small run).  The mapping is
        # page aligned; each buffer starts at a multiple of ON_CHIP_ALIGNMENT inside it.
        offsets, size = [], 0
        for space in ON_CHIP_SPACES:
            offsets.append(size)
            size += -(-max(capacities[space], 1) // ON_CHIP_ALIGNMENT) * ON_CHIP_ALIGNMENT
        self._storage = mmap.mmap(-1, size)
        base = ctypes.addressof(ctypes.c_uint8.from_buffer(self._storage))
        self.struct = PtoCore()
        # The buffer pointers (ON_CHIP_SPACES order), core_id, block_idx, block_num: one write.
        self._buffers = tuple(base + o for o in offsets)
        _CORE_FIELDS.pack_into(self.struct, 0, *self._buffers, core_id, 0, 1)
        self.pointer = ctypes.pointer(self.struct)
        """`PtoCore *` to pass to kernels."""
        self.address = ctypes.addressof(self.struct)
        """The `PtoCore`'s address, for the native scheduler."""
        self.block = (0, 1)
        """(block_idx, block_num) the struct holds: the SPMD block of the running task."""

    def poison(self, sizes: Sequence[int]) -> None:
        """Fills bytes [0, sizes[k]) of each on-chip buffer (ON_CHIP_SPACES order) with
        ON_CHIP_POISON_BYTE: a run starts from this state, whatever ran on the core before."""
        for address, size in zip(self._buffers, sizes, strict=True):
            if size:
                ctypes.memset(address, ON_CHIP_POISON_BYTE, size)

    def set_block(self, block_idx: int, block_num: int) -> None:
        """Tells the next kernel which block of its SPMD dispatch it runs."""
        self.struct.block_idx = block_idx
        self.struct.block_num = block_num
        self.block = (block_idx, block_num)

    def __repr__(self) -> str:
        return f"SimCore({self.core_id})"
