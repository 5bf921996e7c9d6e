"""One run of a loaded program: bind arguments, serve the orchestration, copy results back."""

from __future__ import annotations

import contextlib
import ctypes
import numbers
import os
import struct
from collections.abc import Container, Sequence
from typing import TYPE_CHECKING, Any

import torch

from pypto.ir import dtypes
from pypto.runtime.abi import (
    DIRECTION_MASK,
    DUMP,
    MAX_RANK,
    NO_DEP,
    AllocTensorFn,
    ArgKind,
    Direction,
    DispatchFn,
    PtoArg,
    PtoRuntimeApi,
    SubmitFn,
)
from pypto.runtime.config import RunConfig
from pypto.runtime.errors import OrchestrationError
from pypto.runtime.golden import GoldenCheck
from pypto.runtime.manifest import KernelSpec, ParamSpec
from pypto.runtime.memory import (
    ITEMSIZE_BY_CODE,
    DeviceMemory,
    SimCore,
    describe_tensor,
    tensor_arg,
)
from pypto.runtime.scheduler import Access, Scheduler, Task

if TYPE_CHECKING:
    from pypto.runtime.loader import LoadedProgram


_HOST_CORES = os.cpu_count() or 1  # asked once: the call reads /sys on every use


def default_workers(cores: int) -> int:
    """Worker threads when the config does not say: the platform's cores, bounded by the host's."""
    return max(1, min(cores, _HOST_CORES))


def make_cores(program: LoadedProgram, workers: int | None) -> list[SimCore]:
    """A run's simulated cores: `workers` of them, else the platform's bounded by the host's."""
    manifest = program.manifest
    count = workers if workers is not None else default_workers(manifest.cores)
    return [SimCore(core_id, manifest.capacities) for core_id in range(count)]


class ProgramRun:
    """One invocation: device memory, the scheduler and the services orchestration code calls.

    `cores` lets a `ChipWorker` reuse its simulated cores across runs; `resident` holds
    the `data_ptr()` of the worker's resident tensors, which are bound in place instead
    of being copied in and out.
    """

    def __init__(
        self,
        program: LoadedProgram,
        config: RunConfig,
        *,
        cores: Sequence[SimCore] | None = None,
        resident: Container[int] = (),
    ) -> None:
        self.program = program
        self.config = config
        self.memory = DeviceMemory()
        self.resident = resident
        self.scheduler = Scheduler(
            cores if cores is not None else make_cores(program, config.workers),
            seed=config.schedule_seed,
            detect_races=config.detect_races,
            describe_bytes=self.memory.describe,
            describe_access=self._describe_access,
        )
        # Exceptions cannot cross the C frames of a ctypes callback; the first one waits here.
        self._failure: BaseException | None = None
        # The callback objects must outlive the orchestrate call or C jumps into freed code.
        self._submit_fn = SubmitFn(self._submit)
        self._alloc_fn = AllocTensorFn(self._alloc_tensor)
        self._dispatch_fn = DispatchFn(self._dispatch)
        self._api = PtoRuntimeApi(None, self._submit_fn, self._alloc_fn, self._dispatch_fn)
        # The tensor-dump collector (`enable_dump_args`); None keeps dispatch as it is.
        self._dump = None

    def execute(self, args: Sequence[Any]) -> Any:
        """Runs the orchestration on `args` and returns the output tensor(s)."""
        manifest = self.program.manifest
        _check_arguments(manifest.entry, manifest.params, args)
        # Inputs are compared with the golden before the run: it overwrites InOut arguments.
        golden = GoldenCheck.start(self.config, manifest.params, args)
        params = (PtoArg * len(manifest.params))()
        buffers: dict[int, torch.Tensor] = {}
        for index, (spec, value) in enumerate(zip(manifest.params, args)):
            if spec.is_tensor:
                if value.data_ptr() in self.resident and value.is_contiguous():
                    # A ChipWorker's resident tensor is device memory already: no copies.
                    self.memory.adopt(value, spec.dtype, spec.name, "resident")
                    tensor_arg(params[index], value, spec.dtype, spec.direction)
                    continue
                if spec.direction.reads:
                    # A fresh contiguous copy: poisoning it first would be overwritten anyway.
                    buffer = value.clone(memory_format=torch.contiguous_format)
                    self.memory.adopt(buffer, spec.dtype, spec.name, "param")
                else:
                    buffer = self.memory.allocate(spec.dtype, spec.shape, spec.name, "param")
                tensor_arg(params[index], buffer, spec.dtype, spec.direction)
                buffers[index] = buffer
            elif spec.dtype.is_float:
                params[index].kind = ArgKind.FLOAT
                params[index].f = float(value)
            else:
                params[index].kind = ArgKind.INT
                params[index].i = int(value)

        if self.config.enable_dump_args:
            from pypto.runtime.dump import ArgsDumpCollector

            self._dump = ArgsDumpCollector.for_run(self)
        self.scheduler.start()
        try:
            status = self.program.orchestrate(ctypes.byref(self._api), params)
            if self._failure is not None:
                raise self._failure
            if status != 0:
                raise OrchestrationError(
                    f"{manifest.orchestration_file}: {manifest.orchestration_entry} returned "
                    f"{status} for {manifest.entry!r}"
                )
            self.scheduler.wait()
        except BaseException:
            # Kernels hold raw pointers into device memory: no worker may outlive this run.
            self.scheduler.close()
            with contextlib.suppress(Exception):  # never mask the run's own failure
                self._write_dfx_outputs(complete=False)  # what ran explains a failure best
            raise
        self.scheduler.close()
        self._write_dfx_outputs(complete=True)

        for index, buffer in buffers.items():
            if manifest.params[index].direction.writes:
                args[index].copy_(buffer)
        if golden is not None:
            golden.finish(args)  # raises GoldenMismatchError
        outputs = tuple(args[index] for index in manifest.outputs)
        return outputs[0] if len(outputs) == 1 else outputs

    def _submit(self, ctx, kernel_index, nargs, args, ndeps, deps):
        """`PtoRuntimeApi.submit`; returns the task id, or -1 once anything went wrong."""
        if self._failure is not None:
            return -1
        try:
            if ndeps < 0:
                raise OrchestrationError(f"submit: ndeps must be >= 0, got {ndeps}")
            return self._submit_task(kernel_index, nargs, args, [deps[i] for i in range(ndeps)])
        except BaseException as exc:  # noqa: BLE001 - nothing may unwind through C frames
            self._failure = exc
            return -1

    def _dispatch(self, ctx, kernel_index, nargs, args, ndeps, deps, blocks):
        """`PtoRuntimeApi.dispatch`: `blocks` tasks after the dep ranges; the first id or -1."""
        if self._failure is not None:
            return -1
        try:
            if ndeps < 0:
                raise OrchestrationError(f"dispatch: ndeps must be >= 0, got {ndeps}")
            ids: list[int] = []
            for i in range(ndeps):
                first, count = deps[i].first, deps[i].count
                if count < 0:
                    raise OrchestrationError(f"dispatch: dependency range of {count} tasks")
                ids.extend(range(first, first + count))
            return self._submit_task(kernel_index, nargs, args, ids, blocks)
        except BaseException as exc:  # noqa: BLE001 - nothing may unwind through C frames
            self._failure = exc
            return -1

    def _submit_task(
        self, kernel_index: int, nargs: int, args: Any, deps: list[int], blocks: int = 1
    ) -> int:
        kernels = self.program.manifest.kernels
        if not 0 <= kernel_index < len(kernels):
            raise OrchestrationError(
                f"submit: kernel index {kernel_index} is out of range; "
                f"the artifact has {len(kernels)} kernels"
            )
        spec = kernels[kernel_index]
        if nargs != len(spec.signature):
            raise OrchestrationError(
                f"submit: kernel {spec.name!r} takes {len(spec.signature)} arguments, got {nargs}"
            )
        # The C array is only valid during this call; the task runs later.  One read of
        # its bytes serves both the task's copy and the decoding of its accesses.
        raw = ctypes.string_at(args, _ARG.size * nargs) if nargs else b""
        copied = (PtoArg * nargs).from_buffer_copy(raw)
        accesses = self._accesses(spec, raw)
        kernel = self.program.kernels[kernel_index]
        if self._dump is not None:
            # Only one thread submits, so the next id is the number of tasks so far.
            kernel = self._dump.wrap(kernel, len(self.scheduler.tasks), kernel_index, spec,
                                     copied)
        return self.scheduler.submit(spec.name, kernel, copied, accesses, deps, blocks)

    def _accesses(self, spec: KernelSpec, raw: bytes) -> list[Access]:
        """The device bytes each tensor argument (`raw`: the PtoArg array's bytes) can
        touch, checked against device memory."""
        accesses = []
        signature = spec.signature
        for position, arg in enumerate(_ARG.iter_unpack(raw)):
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
            if dtype not in ITEMSIZE_BY_CODE:
                raise _invalid_arg(spec, position, f"dtype code {dtype}")
            start, end = _byte_range(arg, ndim, ITEMSIZE_BY_CODE[dtype])
            if start == end:
                continue
            if not self.memory.contains(start, end):
                raise _invalid_arg(
                    spec, position, f"the view [{start:#x}, {end:#x}) lies outside device memory"
                )
            accesses.append(Access(start, end, direction, not flags & NO_DEP, position))
        return accesses

    def _describe_access(self, task: Task, access: Access) -> str:
        """`argument 0 ('x', In)`: how diagnostics name one access of a task."""
        signature = self.program.manifest.kernels[0].signature
        for kernel in self.program.manifest.kernels:
            if kernel.name == task.kernel_name:
                signature = kernel.signature
                break
        name = signature[access.arg].name if 0 <= access.arg < len(signature) else "?"
        untracked = ", no dependency tracking" if not access.tracked else ""
        return f"argument {access.arg} ({name!r}, {access.direction.name}{untracked})"

    def _write_dfx_outputs(self, complete: bool) -> None:
        """deps.json / swimlane.json / args_dump/ under <work_dir>/dfx_outputs/, when the
        config asks; `complete` is False after a failed run."""
        if self._dump is not None:
            self._dump.finish(complete)
        if not (self.config.enable_dep_gen or self.config.enable_swimlane):
            return
        from pypto.runtime import dfx

        if self.config.enable_dep_gen:
            dfx.write_deps(self)
        if self.config.enable_swimlane:
            dfx.write_swimlane(self)

    def _alloc_tensor(self, ctx, tensor_ptr, name):
        """`PtoRuntimeApi.alloc_tensor`: a poisoned scratch buffer alive until the run ends."""
        try:
            tensor = tensor_ptr.contents
            shape = list(tensor.shape[: tensor.ndim]) if 0 <= tensor.ndim <= MAX_RANK else None
            if shape is None or tensor.dtype not in ITEMSIZE_BY_CODE or min(shape, default=0) < 0:
                raise OrchestrationError(
                    f"alloc_tensor: invalid request (ndim {tensor.ndim}, dtype code "
                    f"{tensor.dtype}, shape {shape})"
                )
            dtype = dtypes.from_code(tensor.dtype)
            label = name.decode("utf-8", "replace") if name else None
            describe_tensor(tensor, self.memory.allocate(dtype, shape, label), dtype)
            return 0
        except BaseException as exc:  # noqa: BLE001 - nothing may unwind through C frames
            if self._failure is None:
                self._failure = exc
            return -1


_TENSOR = int(ArgKind.TENSOR)
_DIRECTIONS = {int(d): d for d in Direction}

# A PtoArg's fields in order: kind, direction, tensor (data, shape[4], stride[4], ndim,
# dtype), i, f.  Unpacking the bytes is several times cheaper than reading ctypes fields.
_ARG = struct.Struct(f"=iiQ{MAX_RANK}q{MAX_RANK}qiiqd")
assert _ARG.size == ctypes.sizeof(PtoArg) and PtoArg.i.offset == _ARG.size - 16


def _byte_range(arg: tuple, ndim: int, itemsize: int) -> tuple[int, int]:
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
    return base + low * itemsize, base + (high + 1) * itemsize


def _invalid_arg(spec: KernelSpec, position: int, problem: str) -> OrchestrationError:
    name = spec.signature[position].name
    return OrchestrationError(
        f"submit: kernel {spec.name!r} argument {position} ({name!r}) is invalid: {problem}"
    )


def _check_arguments(entry: str, params: Sequence[ParamSpec], args: Sequence[Any]) -> None:
    """Refuses arguments that do not match the manifest, naming the parameter."""
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise TypeError(f"{entry}() takes {len(params)} arguments ({names}), got {len(args)}")
    for spec, value in zip(params, args):
        if spec.is_tensor:
            _check_tensor(spec, value)
        else:
            _check_scalar(spec, value)


def _check_tensor(spec: ParamSpec, value: Any) -> None:
    if not isinstance(value, torch.Tensor):
        raise TypeError(
            f"parameter {spec.name!r}: expected a torch.Tensor, found {type(value).__name__}"
        )
    try:
        found = dtypes.from_torch(value.dtype).name
    except TypeError:
        found = str(value.dtype)
    if found != spec.dtype.name:
        raise TypeError(f"parameter {spec.name!r}: expected dtype {spec.dtype.name}, found {found}")
    if tuple(value.shape) != spec.shape:
        raise ValueError(
            f"parameter {spec.name!r}: expected shape {list(spec.shape)}, found {list(value.shape)}"
        )


def _check_scalar(spec: ParamSpec, value: Any) -> None:
    wanted = numbers.Real if spec.dtype.is_float else numbers.Integral
    if not isinstance(value, wanted):
        raise TypeError(
            f"parameter {spec.name!r}: expected a Python "
            f"{'float' if spec.dtype.is_float else 'int'} "
            f"for scalar {spec.dtype.name}, found {type(value).__name__}"
        )
    if spec.dtype.is_int:
        bits = spec.dtype.bits
        if spec.dtype.is_signed:
            low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        else:
            low, high = 0, (1 << bits) - 1
        if not low <= value <= high:
            raise ValueError(
                f"parameter {spec.name!r}: {value} does not fit scalar {spec.dtype.name} "
                f"[{low}, {high}]"
            )
