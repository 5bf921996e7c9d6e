"""One run of a loaded program: bind arguments, serve the orchestration, copy results back."""

from __future__ import annotations

import ctypes
import numbers
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from pypto.ir import dtypes
from pypto.runtime.abi import (
    MAX_RANK,
    AllocTensorFn,
    ArgKind,
    Direction,
    PtoArg,
    PtoRuntimeApi,
    SubmitFn,
)
from pypto.runtime.config import RunConfig
from pypto.runtime.errors import OrchestrationError
from pypto.runtime.manifest import KernelSpec, ParamSpec
from pypto.runtime.memory import (
    ITEMSIZE_BY_CODE,
    DeviceMemory,
    SimCore,
    byte_range,
    describe_tensor,
    tensor_arg,
)
from pypto.runtime.scheduler import Access, Scheduler

if TYPE_CHECKING:
    from pypto.runtime.loader import LoadedProgram


def default_workers(cores: int) -> int:
    """Worker threads when the config does not say: the platform's cores, bounded by the host's."""
    return max(1, min(cores, os.cpu_count() or 1))


class ProgramRun:
    """One invocation: device memory, the scheduler and the services orchestration code calls."""

    def __init__(self, program: LoadedProgram, config: RunConfig) -> None:
        self.program = program
        manifest = program.manifest
        workers = config.workers if config.workers is not None else default_workers(manifest.cores)
        self.memory = DeviceMemory()
        self.scheduler = Scheduler(
            [SimCore(core_id, manifest.capacities) for core_id in range(workers)],
            seed=config.schedule_seed,
        )
        # Exceptions cannot cross the C frames of a ctypes callback; the first one waits here.
        self._failure: BaseException | None = None
        # The callback objects must outlive the orchestrate call or C jumps into freed code.
        self._submit_fn = SubmitFn(self._submit)
        self._alloc_fn = AllocTensorFn(self._alloc_tensor)
        self._api = PtoRuntimeApi(None, self._submit_fn, self._alloc_fn)

    def execute(self, args: Sequence[Any]) -> Any:
        """Runs the orchestration on `args` and returns the output tensor(s)."""
        manifest = self.program.manifest
        _check_arguments(manifest.entry, manifest.params, args)
        params = (PtoArg * len(manifest.params))()
        buffers: dict[int, torch.Tensor] = {}
        for index, (spec, value) in enumerate(zip(manifest.params, args)):
            if spec.is_tensor:
                buffer = self.memory.allocate(spec.dtype, spec.shape)
                if spec.direction.reads:
                    buffer.copy_(value)
                tensor_arg(params[index], buffer, spec.dtype, spec.direction)
                buffers[index] = buffer
            elif spec.dtype.is_float:
                params[index].kind = ArgKind.FLOAT
                params[index].f = float(value)
            else:
                params[index].kind = ArgKind.INT
                params[index].i = int(value)

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
        finally:
            # Kernels hold raw pointers into device memory: no worker may outlive this run.
            self.scheduler.close()

        for index, buffer in buffers.items():
            if manifest.params[index].direction.writes:
                args[index].copy_(buffer)
        outputs = tuple(args[index] for index in manifest.outputs)
        return outputs[0] if len(outputs) == 1 else outputs

    def _submit(self, ctx, kernel_index, nargs, args, ndeps, deps):
        """`PtoRuntimeApi.submit`; returns the task id, or -1 once anything went wrong."""
        if self._failure is not None:
            return -1
        try:
            return self._submit_task(kernel_index, nargs, args, ndeps, deps)
        except BaseException as exc:  # noqa: BLE001 - nothing may unwind through C frames
            self._failure = exc
            return -1

    def _submit_task(self, kernel_index: int, nargs: int, args: Any, ndeps: int, deps: Any) -> int:
        kernels = self.program.manifest.kernels
        if not 0 <= kernel_index < len(kernels):
            raise OrchestrationError(
                f"submit: kernel index {kernel_index} is out of range; "
                f"the artifact has {len(kernels)} kernels"
            )
        spec = kernels[kernel_index]
        if nargs != len(spec.signature) or ndeps < 0:
            raise OrchestrationError(
                f"submit: kernel {spec.name!r} takes {len(spec.signature)} arguments, got {nargs} "
                f"(with {ndeps} deps)"
            )
        # The C array is only valid during this call; the task runs later.
        copied = (PtoArg * nargs)()
        if nargs:
            ctypes.memmove(copied, args, ctypes.sizeof(copied))
        accesses = self._accesses(spec, copied)
        return self.scheduler.submit(
            spec.name,
            self.program.kernels[kernel_index],
            copied,
            accesses,
            [deps[i] for i in range(ndeps)],
        )

    def _accesses(self, spec: KernelSpec, args: Any) -> list[Access]:
        """The device bytes each tensor argument can touch, checked against device memory."""
        accesses = []
        for position, arg in enumerate(args):
            is_tensor = arg.kind == _TENSOR
            if is_tensor != spec.signature[position].is_tensor:
                raise _invalid_arg(spec, position, f"expected a {spec.signature[position].kind}")
            if not is_tensor:
                continue
            tensor = arg.tensor
            direction = _DIRECTIONS.get(arg.direction)
            if direction is None or not 0 <= tensor.ndim <= MAX_RANK:
                raise _invalid_arg(spec, position, f"direction {arg.direction}, ndim {tensor.ndim}")
            if tensor.dtype not in ITEMSIZE_BY_CODE:
                raise _invalid_arg(spec, position, f"dtype code {tensor.dtype}")
            start, end = byte_range(tensor)
            if start == end:
                continue
            if not self.memory.contains(start, end):
                raise _invalid_arg(
                    spec, position, f"the view [{start:#x}, {end:#x}) lies outside device memory"
                )
            accesses.append(Access(start, end, direction))
        return accesses

    def _alloc_tensor(self, ctx, tensor_ptr):
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
            describe_tensor(tensor, self.memory.allocate(dtype, shape), dtype)
            return 0
        except BaseException as exc:  # noqa: BLE001 - nothing may unwind through C frames
            if self._failure is None:
                self._failure = exc
            return -1


_TENSOR = int(ArgKind.TENSOR)
_DIRECTIONS = {int(d): d for d in Direction}


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
            f"parameter {spec.name!r}: expected a Python {'float' if spec.dtype.is_float else 'int'} "
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
