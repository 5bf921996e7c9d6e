"""The device buffers a native run binds a program's parameters to (`ParamBuffers`)."""

from __future__ import annotations

import ctypes
from collections.abc import Container, Iterator, Sequence
from typing import Any

import torch

from pypto.runtime.abi import ArgKind, PtoArg
from pypto.runtime.memory import DeviceMemory, as_copyable, tensor_arg
from pypto.runtime.native import PnrCall


class ParamBuffers:
    """Device buffers for the tensor parameters of one program, the `PtoArg` array that
    binds them and the `native.PnrCall` that moves data in and out, reused across plain
    calls (`execution.RunReuse` pools them).  Each call copies its inputs in and poisons
    its outputs again, as fresh buffers would be, instead of allocating; the native
    scheduler does the copies and fills of contiguous tensors itself, torch the others.
    A set of buffers holds one run's data at a time."""

    def __init__(self, params: Sequence, orchestrate: int, on_chip: Sequence[int]) -> None:
        self.specs = tuple(params)
        self.params = (PtoArg * max(1, len(self.specs)))()
        self._scalars: list[tuple[int, bool]] = []
        self._buffers: dict[int, torch.Tensor] = {}
        copy_in: list[tuple[int, torch.Tensor, int]] = []  # (index, buffer, bytes)
        fill: list[tuple[int, torch.Tensor, int]] = []
        copy_out: list[tuple[int, torch.Tensor, int]] = []
        ranges: list[int] = []
        for index, spec in enumerate(self.specs):
            if not spec.is_tensor:
                self.params[index].kind = ArgKind.FLOAT if spec.dtype.is_float else ArgKind.INT
                self._scalars.append((index, spec.dtype.is_float))
                continue
            buffer = torch.empty(spec.dtype.torch_shape(spec.shape), dtype=spec.dtype.to_torch())
            self._buffers[index] = buffer
            tensor_arg(self.params[index], buffer, spec.dtype, spec.direction)
            nbytes = buffer.numel() * buffer.element_size()
            entry = (index, buffer, nbytes)
            (copy_in if spec.copies_in else fill).append(entry)
            if spec.direction.writes:
                copy_out.append(entry)
            if nbytes:
                ranges += [buffer.data_ptr(), buffer.data_ptr() + nbytes]
        self.ranges = (ctypes.c_uint64 * max(1, len(ranges)))(*ranges)
        self.nranges = len(ranges) // 2
        # Flat (dst, src, bytes) triples; (dst, bytes, dtype) for fills.
        self._copy_in = [(3 * k, *entry) for k, entry in enumerate(copy_in)]
        self._fill = [(3 * k, *entry) for k, entry in enumerate(fill)]
        self._copy_out = [(3 * k, *entry) for k, entry in enumerate(copy_out)]
        self._in_array = (ctypes.c_uint64 * max(1, 3 * len(copy_in)))()
        self._fill_array = (ctypes.c_uint64 * max(1, 3 * len(fill)))()
        self._out_array = (ctypes.c_uint64 * max(1, 3 * len(copy_out)))()
        for k3, _, buffer, _ in self._copy_in:
            self._in_array[k3] = buffer.data_ptr()
        for k3, index, buffer, nbytes in self._fill:
            self._fill_array[k3:k3 + 3] = [buffer.data_ptr(), nbytes, self.specs[index].dtype.code]
        for k3, _, buffer, _ in self._copy_out:
            self._out_array[k3 + 1] = buffer.data_ptr()
        self.call = PnrCall(orchestrate, ctypes.addressof(self.params), len(copy_in), len(fill),
                            len(copy_out), 0, ctypes.addressof(self._in_array),
                            ctypes.addressof(self._fill_array), ctypes.addressof(self._out_array),
                            None, ctypes.addressof(self.ranges), self.nranges)
        # Bytes of each on-chip space every core used gets poisoned before its first task.
        for k, size in enumerate(on_chip):
            self.call.on_chip[k] = size
        self._cores = None
        self._rings: object = None
        self._address = ctypes.addressof(self.call)
        self._by_torch: list[tuple[int, torch.Tensor]] = []
        self._bound: tuple = ()
        self._in_place: Container[int] = ()

    def size_rings(self, rings: dict[str, tuple[int, ...]]) -> None:
        """The call's ring capacities (`RunConfig.rings`), set again only when they change."""
        if rings is self._rings:
            return
        self._rings = rings
        call = self.call
        for k in range(4):
            call.ring_task_window[k] = rings["task_window"][k]
            call.ring_heap[k] = rings["heap"][k]
            call.ring_dep_pool[k] = rings["dep_pool"][k]

    def bind(self, args: Sequence, resident, cores) -> int:
        """Prepares the call on `args` and `cores` (a `PtoCore *[]`): scalars, what to
        copy in, poison and copy back; returns the address of the `PnrCall`.  A tensor
        whose `data_ptr()` is in `resident` (a ChipWorker's) is bound in place: no copy
        in or out."""
        params, call = self.params, self.call
        if cores is not self._cores:
            self._cores = cores
            call.cores = ctypes.addressof(cores)
            call.ncores = len(cores)
        for index, is_float in self._scalars:
            if is_float:
                params[index].f = float(args[index])
            else:
                params[index].i = int(args[index])
        in_place: frozenset[int] = frozenset()
        if resident:
            in_place = frozenset(index for index in self._buffers
                                 if args[index].data_ptr() in resident
                                 and args[index].is_contiguous())
        self._in_place = in_place
        self._set_copies(args, in_place)
        if not in_place:
            if self._bound:
                self._unbind()
            return self._address
        return self._bind_in_place(args, in_place)

    def _set_copies(self, args: Sequence, in_place: frozenset[int]) -> None:
        """The copy-in and copy-out arrays for `args`: contiguous tensors are copied by the
        native call, others with torch (out: after the run, `copy_back`)."""
        for _, buffer, value in _native_copies(self._in_array, 1, self._copy_in, args,
                                               in_place):
            as_copyable(buffer).copy_(as_copyable(value))
        self._by_torch = [(index, buffer) for index, buffer, _ in _native_copies(
            self._out_array, 0, self._copy_out, args, in_place)]

    def _bind_in_place(self, args: Sequence, in_place: frozenset[int]) -> int:
        """The call bound to a copy of the parameters where the tensors `in_place` are the
        caller's own (no fill, no copies), with the address ranges they span."""
        params, call = self.params, self.call
        for k3, index, _, nbytes in self._fill:
            self._fill_array[k3 + 1] = 0 if index in in_place else nbytes
        bound = (PtoArg * len(params)).from_buffer_copy(params)
        ranges: list[int] = []
        for index, buffer in self._buffers.items():
            spec = self.specs[index]
            if index in in_place:
                buffer = args[index]
                tensor_arg(bound[index], buffer, spec.dtype, spec.direction)
            if buffer.numel():
                start = buffer.data_ptr()
                ranges += [start, start + buffer.numel() * buffer.element_size()]
        ranges_array = (ctypes.c_uint64 * max(1, len(ranges)))(*ranges)
        self._bound = (bound, ranges_array)
        call.params = ctypes.addressof(bound)
        call.ranges = ctypes.addressof(ranges_array)
        call.nranges = len(ranges) // 2
        return self._address

    def record_into(self, memory: DeviceMemory, args: Sequence) -> None:
        """Registers the last call's parameter tensors in `memory`, in parameter order
        and named as the Python scheduler names them."""
        for index, buffer in self._buffers.items():
            spec = self.specs[index]
            if index in self._in_place:
                memory.adopt(args[index], spec.dtype, spec.name, "resident")
            else:
                memory.adopt(buffer, spec.dtype, spec.name, "param")

    def _unbind(self) -> None:
        """Back to the buffers after a call that bound resident tensors in place."""
        self._bound = ()
        self.call.params = ctypes.addressof(self.params)
        self.call.ranges = ctypes.addressof(self.ranges)
        self.call.nranges = self.nranges
        for k3, _, _, nbytes in self._fill:
            self._fill_array[k3 + 1] = nbytes

    def copy_back(self, args: Sequence) -> None:
        """After a successful run: copies the outputs the native call could not (into
        non-contiguous tensors) back with torch."""
        for index, buffer in self._by_torch:
            as_copyable(args[index]).copy_(as_copyable(buffer))


def _native_copies(copies: ctypes.Array, slot: int, entries: list, args: Sequence,
                   in_place: Container[int]) -> Iterator[tuple[int, torch.Tensor, Any]]:
    """Sets the (dst, src, bytes) triples `copies` of `entries` for one call on `args`: the
    caller's pointer at `slot` (1: src, copying in; 0: dst, copying out) and its size for a
    contiguous tensor, which the native call copies; no bytes for one bound in place, or
    one yielded as (index, buffer, arg) for torch to copy."""
    for k3, index, buffer, nbytes in entries:
        value = args[index]
        if index not in in_place and value.is_contiguous():
            copies[k3 + slot] = value.data_ptr()
            copies[k3 + 2] = nbytes
            continue
        copies[k3 + 2] = 0
        if index not in in_place:
            yield index, buffer, value
