"""One run of a loaded program: bind arguments, serve the orchestration, copy results back."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import numbers
import os
import time
import weakref
from collections.abc import Container, Sequence
from typing import TYPE_CHECKING, Any

import torch

from pypto.ir import dtypes
from pypto.runtime import native
from pypto.runtime.abi import (
    MAX_RANK,
    TASK_EARLY_RESOLVE,
    TASK_GANG,
    AllocTensorFn,
    ArgKind,
    DispatchFn,
    PtoArg,
    PtoRuntimeApi,
    ScopeFn,
    SubmitFn,
)
from pypto.runtime.accesses import ARG_STRUCT, decode_accesses
from pypto.runtime.config import RunConfig
from pypto.runtime.errors import (
    OrchestrationError,
    PyptoRuntimeError,
    UnsupportedError,
    orchestration_failed,
)
from pypto.runtime.golden import GoldenCheck
from pypto.runtime.manifest import KernelSpec, ParamSpec
from pypto.runtime.memory import (
    ITEMSIZE_BY_CODE,
    DeviceMemory,
    SimCore,
    as_copyable,
    describe_tensor,
    tensor_arg,
)
from pypto.runtime.param_buffers import ParamBuffers
from pypto.runtime.rings import DEFAULT_RINGS, RINGS
from pypto.runtime.scheduler import Access, Scheduler

if TYPE_CHECKING:
    from pypto.runtime.dump import ArgsDumpCollector
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

    The run takes the native scheduler (`pypto.runtime.native`) unless it needs what
    only the Python scheduler offers (`python_reason`); `scheduler` is then a
    `native.NativeSchedule` with the same reading surface (tasks, edges, cores).
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
        self.resident = resident
        self._reuse = _reuse_of(program)
        self._own_cores: list[SimCore] | None = None  # from the program's pool: given back
        self.native = _native_for(self._reuse, config)
        if self.native is None and config.sizes_rings:
            raise UnsupportedError(
                f"{config.where}: ring_task_window= / ring_heap= / ring_dep_pool= / "
                "enable_scope_stats= are served by the native scheduler, and this run takes "
                f"the Python one ({python_reason(config) or 'PYPTO_SCHEDULER=python'})",
                hint="drop the ring arguments for this run, or the option that needs the "
                     "Python scheduler")
        if cores is None:
            cores = self._own_cores = self._reuse.take_cores(config.workers)
        self.cores = cores
        # The tensor-dump collector (`enable_dump_args`); None keeps dispatch as it is.
        self._dump: ArgsDumpCollector | None = None
        if self.native is not None:
            self.scheduler: Any = native.NativeSchedule(program, self.cores,
                                                        time.perf_counter_ns())
            return
        self.memory = DeviceMemory()
        self.scheduler = Scheduler(
            self.cores,
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
        self._scope_begin_fn = ScopeFn(self._scope_begin)
        self._scope_end_fn = ScopeFn(self._scope_end)
        self._scope_depth = 0
        self._api = PtoRuntimeApi(None, self._submit_fn, self._alloc_fn, self._dispatch_fn,
                                  self._scope_begin_fn, self._scope_end_fn)

    def execute(self, args: Sequence[Any]) -> Any:
        """Runs the orchestration on `args` and returns the output tensor(s)."""
        try:
            if self.native is not None:
                return self._execute_native(self.native, args)
            return self._execute_python(args)
        finally:
            if self._own_cores is not None:
                self._reuse.give_back_cores(self._own_cores)

    def _execute_native(self, engine: native.NativeProgram, args: Sequence[Any]) -> Any:
        """`execute` on the native scheduler (`RunReuse.run_native`), with the golden check
        and the DFX outputs around it."""
        manifest = self.program.manifest
        golden = None
        if self.config.golden_data_dir is not None:
            self._reuse.check_arguments(args)  # before the golden check reads them
            golden = GoldenCheck.start(self.config, manifest.params, args)
        after_run = None
        if self.config.enable_dep_gen or self.config.enable_swimlane \
                or self.config.enable_scope_stats:
            after_run = self._record_native_run
        self._reuse.run_native(engine, self.cores, self.scheduler, args, self.resident,
                               after_run, self.config.rings)
        if golden is not None:
            golden.finish(args, self.scheduler)  # raises GoldenMismatchError
        return _outputs(manifest, args)

    def _record_native_run(self, buffers: ParamBuffers, args: Sequence[Any], code: int) -> None:
        """Writes the DFX outputs of a native run that just ended (`code` 0: it completed)."""
        self.memory = DeviceMemory()
        buffers.record_into(self.memory, args)
        self.scheduler.record_scratch(self.memory)
        if self.config.enable_scope_stats:
            from pypto.runtime import dfx, rings

            rings.write_scope_stats(dfx.dfx_dir(), self.config.rings,
                                    self.scheduler.scopes())
        if code:
            with contextlib.suppress(Exception):  # never mask the run's own failure
                self._write_dfx_outputs(complete=False)
        else:
            self._write_dfx_outputs(complete=True)

    def _execute_python(self, args: Sequence[Any]) -> Any:
        """`execute` on the Python scheduler, with every instrument it offers."""
        manifest = self.program.manifest
        _check_arguments(manifest.entry, manifest.params, args)
        # Inputs are compared with the golden before the run: it overwrites InOut arguments.
        golden = GoldenCheck.start(self.config, manifest.params, args)
        params, buffers = self._bind_params(args)
        if self.config.enable_dump_args:
            from pypto.runtime.dump import ArgsDumpCollector

            self._dump = ArgsDumpCollector.for_run(self)
        # Every run starts from the same on-chip state, whatever ran on these cores before.
        poison = self._reuse.on_chip_poison
        for core in self.cores:
            core.poison(poison)
        self.scheduler.start()
        try:
            status = self.program.orchestrate(ctypes.byref(self._api), params)
            if self._failure is not None:
                raise self._failure
            if status != 0:
                raise orchestration_failed(manifest, status)
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
                as_copyable(args[index]).copy_(as_copyable(buffer))
        if golden is not None:
            golden.finish(args, self.scheduler)  # raises GoldenMismatchError
        return _outputs(manifest, args)

    def _bind_params(self, args: Sequence[Any]) -> tuple[Any, dict[int, torch.Tensor]]:
        """The orchestration's `PtoArg[]` for `args`, and the device buffer of each tensor
        parameter that is copied (by index; a resident tensor is bound in place)."""
        manifest = self.program.manifest
        params = (PtoArg * len(manifest.params))()
        buffers: dict[int, torch.Tensor] = {}
        for index, (spec, value) in enumerate(zip(manifest.params, args, strict=True)):
            if not spec.is_tensor:
                params[index].kind = ArgKind.FLOAT if spec.dtype.is_float else ArgKind.INT
                if spec.dtype.is_float:
                    params[index].f = float(value)
                else:
                    params[index].i = int(value)
            elif value.data_ptr() in self.resident and value.is_contiguous():
                # A ChipWorker's resident tensor is device memory already: no copies.
                self.memory.adopt(value, spec.dtype, spec.name, "resident")
                tensor_arg(params[index], value, spec.dtype, spec.direction)
            else:
                if spec.copies_in:
                    # A fresh contiguous copy: poisoning it first would be overwritten anyway.
                    buffer = value.clone(memory_format=torch.contiguous_format)
                    self.memory.adopt(buffer, spec.dtype, spec.name, "param")
                else:
                    buffer = self.memory.allocate(spec.dtype, spec.shape, spec.name, "param")
                tensor_arg(params[index], buffer, spec.dtype, spec.direction)
                buffers[index] = buffer
        return params, buffers

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

    def _scope_begin(self, ctx):
        """`PtoRuntimeApi.scope_begin`: the Python scheduler has no rings (ring sizes are
        the native scheduler's); it checks that scopes pair."""
        self._scope_depth += 1
        return 0

    def _scope_end(self, ctx):
        """`PtoRuntimeApi.scope_end`."""
        if self._failure is not None:
            return -1
        if self._scope_depth == 0:
            self._failure = OrchestrationError(
                "scope_end: no runtime scope is open (scope_begin and scope_end must pair)")
            return -1
        self._scope_depth -= 1
        return 0

    def _dispatch(self, ctx, kernel_index, nargs, args, ndeps, deps, blocks, flags):
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
            return self._submit_task(kernel_index, nargs, args, ids, blocks, flags)
        except BaseException as exc:  # noqa: BLE001 - nothing may unwind through C frames
            self._failure = exc
            return -1

    def _submit_task(
        self, kernel_index: int, nargs: int, args: Any, deps: list[int], blocks: int = 1,
        flags: int = 0,
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
        raw = ctypes.string_at(args, ARG_STRUCT.size * nargs) if nargs else b""
        copied = (PtoArg * nargs).from_buffer_copy(raw)
        accesses = self._accesses(spec, raw)
        kernel = self.program.kernels[kernel_index]
        if self._dump is not None:
            # Only one thread submits, so the next id is the number of tasks so far.
            kernel = self._dump.wrap(kernel, len(self.scheduler.tasks), kernel_index, spec,
                                     copied)
        # The ring the native scheduler would give it (the scopes open, less the implicit
        # one: the Python scheduler keeps no ring resources, only records the ring).
        ring = min(max(self._scope_depth - 1, 0), RINGS - 1)
        return self.scheduler.submit(spec.name, kernel, copied, accesses, deps, blocks,
                                     early_resolve=bool(flags & TASK_EARLY_RESOLVE), ring=ring,
                                     gang=bool(flags & TASK_GANG))

    def _accesses(self, spec: KernelSpec, raw: bytes) -> list[Access]:
        """The device bytes each tensor argument (`raw`: the PtoArg array's bytes) can
        touch, checked against device memory."""
        return decode_accesses(spec, raw, self.memory.contains)

    def _describe_access(self, kernel_name: str, access: Access) -> str:
        """`argument 0 ('x', In)`: how diagnostics name one access of a task of `kernel_name`."""
        signature = self.program.manifest.kernels[0].signature
        for kernel in self.program.manifest.kernels:
            if kernel.name == kernel_name:
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


def python_reason(config: RunConfig) -> str | None:
    """Why a run with `config` needs the Python scheduler (None: the native one serves)."""
    if config.schedule_seed is None and not (config.detect_races or config.enable_dump_args):
        return None
    if config.schedule_seed is not None:
        return "schedule_seed= (seeded schedules)"
    if config.detect_races:
        return "detect_races=True (the race detector)"
    return "enable_dump_args= (tensor dumps)"


def _native_for(reuse: RunReuse, config: RunConfig) -> native.NativeProgram | None:
    """The native engine for this run, or None for the Python scheduler ($PYPTO_SCHEDULER
    decides, `auto` by what the run needs)."""
    chosen = native.mode()
    if chosen == "python":
        return None
    reason = python_reason(config)
    engine = reuse.engine() if reason is None else reason
    if isinstance(engine, str):
        if chosen == "native":
            raise PyptoRuntimeError(
                f"PYPTO_SCHEDULER=native, but this run needs the Python scheduler: {engine}; "
                "unset PYPTO_SCHEDULER (or set it to auto) to let the runtime choose"
            )
        return None
    return engine


class RunReuse:
    """What the plain calls of one program reuse: simulated cores (every run poisons the
    on-chip bytes its kernels can touch first, `Manifest.on_chip_poison`, so what the
    previous run left is never seen), device buffers for the parameters
    (`param_buffers.ParamBuffers`, refilled per call) and the argument checks.  Each run takes
    its own from a pool and gives them back when it ends, so concurrent calls never share
    a buffer or a core."""

    def __init__(self, program: LoadedProgram) -> None:
        self.program = program
        self._core_sets: dict[int, list[list[SimCore]]] = {}
        self._core_arrays: dict[int, tuple[Sequence[SimCore], Any]] = {}
        self._buffers: list[ParamBuffers] = []
        self._engine: native.NativeProgram | str | None = None
        self.on_chip_poison = program.manifest.on_chip_poison
        """Bytes of each on-chip space a run poisons on its cores (ON_CHIP_SPACES order)."""
        params = program.manifest.params
        self._tensor_checks = []
        self._scalar_checks = []
        for index, spec in enumerate(params):
            if spec.is_tensor:
                torch_dtype = spec.dtype.to_torch()
                # HF8's tensors are torch.uint8 ones holding the codes (docs/numerics.md), a
                # 4-bit type's hold two elements a byte (the last dimension halved)
                exact = dtypes.from_torch(torch_dtype).name == spec.dtype.name or \
                    spec.dtype.value.torch_storage is not None
                self._tensor_checks.append((index, torch_dtype if exact else None,
                                            spec.dtype.torch_shape(spec.shape),
                                            spec.direction.writes))
            else:
                self._scalar_checks.append((index, spec))

    def check_arguments(self, args: Sequence[Any]) -> None:
        """`_check_arguments`, with the common case (right tensors) decided in a few
        comparisons; anything else takes the full check for its message."""
        params = self.program.manifest.params
        if len(args) != len(params):
            _check_arguments(self.program.manifest.entry, params, args)
        tensor, strided = torch.Tensor, torch.strided
        for index, dtype, shape, writes in self._tensor_checks:
            value = args[index]
            if not (isinstance(value, tensor) and value.dtype is dtype and value.shape == shape
                    and value.is_cpu and value.layout is strided and not value.is_neg()
                    and (not writes or value.is_contiguous())):
                _check_arguments(self.program.manifest.entry, params, args)
                return
        for index, spec in self._scalar_checks:
            _check_scalar(spec, args[index])

    def engine(self) -> native.NativeProgram | str:
        """`native.for_program(program)`, asked again only when the program's kernels or
        orchestration were replaced."""
        engine = self._engine
        program = self.program
        if (engine is None or isinstance(engine, str) or engine.kernels is not program.kernels
                or engine.orchestration is not program.orchestrate):
            engine = self._engine = native.for_program(program)
        return engine

    def run_native(self, engine: native.NativeProgram, cores: Sequence[SimCore],
                   schedule: native.NativeSchedule, args: Sequence[Any],
                   resident: Container[int] = (), after_run: Any = None,
                   rings: dict[str, tuple[int, ...]] | None = None) -> None:
        """One native run on `cores`: checks `args`, binds them to pooled buffers (tensors
        whose `data_ptr()` is in `resident` in place), runs the orchestration and every task
        in one call, hands the run to `schedule`, calls `after_run(buffers, args, code)`
        when given, then raises the run's error or copies the outputs back."""
        self.check_arguments(args)
        buffers = self.take_buffers(engine)
        try:
            call = buffers.bind(args, resident, self.core_array(cores))
            buffers.size_rings(rings or DEFAULT_RINGS)
            code = engine.lib.pnr_run(engine.handle, call)
            schedule.attach(engine.lib, buffers.call.run)
            if after_run is not None:
                after_run(buffers, args, code)
            if code:
                raise native.run_error(engine.lib, buffers.call.run, self.program)
            buffers.copy_back(args)
        finally:
            self.give_back_buffers(buffers)

    def take_cores(self, workers: int | None) -> list[SimCore]:
        """A set of cores for one run: a pooled one, else fresh ones (each run poisons them)."""
        count = workers if workers is not None else default_workers(self.program.manifest.cores)
        pool = self._core_sets.get(count)
        if pool:
            try:
                return pool.pop()
            except IndexError:  # another thread took the last one
                pass
        return make_cores(self.program, count)

    def give_back_cores(self, cores: list[SimCore]) -> None:
        """Returns `cores` (from `take_cores`) once their run has ended."""
        self._core_sets.setdefault(len(cores), []).append(cores)

    def core_array(self, cores: Sequence[SimCore]) -> Any:
        """`native.core_array(cores)`, built once per core set."""
        cached = self._core_arrays.get(id(cores))
        if cached is None or cached[0] is not cores:
            cached = self._core_arrays[id(cores)] = (cores, native.core_array(cores))
        return cached[1]

    def take_buffers(self, engine: native.NativeProgram) -> ParamBuffers:
        """Device buffers for one run's parameters."""
        if self._buffers:
            try:
                return self._buffers.pop()
            except IndexError:  # another thread took the last one
                pass
        return ParamBuffers(self.program.manifest.params, engine.orchestrate,
                            self.on_chip_poison)

    def give_back_buffers(self, buffers: ParamBuffers) -> None:
        """Returns `buffers` once their run has ended (no task runs any more)."""
        self._buffers.append(buffers)


def run(program: LoadedProgram, config: RunConfig, args: Sequence[Any]) -> Any:
    """Runs `program` on `args` and returns its outputs; sets `program.last_schedule`.

    A plain native run (no golden, no DFX outputs) goes straight to `RunReuse.run_native`:
    the warm path of a JIT call, ~2 µs shorter than building a `ProgramRun`."""
    reuse = _reuse_of(program)
    if config.golden_data_dir is None and not (config.enable_dep_gen or config.enable_swimlane
                                               or config.enable_scope_stats):
        engine = _native_for(reuse, config)
        if engine is not None:
            cores = reuse.take_cores(config.workers)
            schedule = native.NativeSchedule(program, cores, time.perf_counter_ns())
            program.last_schedule = schedule
            try:
                reuse.run_native(engine, cores, schedule, args, rings=config.rings)
            finally:
                reuse.give_back_cores(cores)
            return _outputs(program.manifest, args)
    program_run = ProgramRun(program, config)
    program.last_schedule = program_run.scheduler
    return program_run.execute(args)


def _outputs(manifest, args: Sequence[Any]) -> Any:
    """The output tensor among `args`, or a tuple of them when there are several."""
    outputs = manifest.outputs
    if len(outputs) == 1:
        return args[outputs[0]]
    return tuple(args[index] for index in outputs)


_REUSE: dict[int, tuple[weakref.ref, RunReuse]] = {}


def _forget(table: dict, key: int, _ref: object) -> None:
    """The weak reference's callback: the program `key` is gone, its entry leaves."""
    table.pop(key, None)


def _reuse_of(program: LoadedProgram) -> RunReuse:
    # Keyed by id with a weak reference (cheaper than a WeakKeyDictionary lookup); the
    # entry leaves with its program.
    entry = _REUSE.get(id(program))
    if entry is None or entry[0]() is not program:
        key = id(program)
        ref = weakref.ref(program, functools.partial(_forget, _REUSE, key))
        entry = _REUSE[key] = (ref, RunReuse(program))
    return entry[1]






def _check_arguments(entry: str, params: Sequence[ParamSpec], args: Sequence[Any]) -> None:
    """Refuses arguments that do not match the manifest, naming the parameter."""
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise TypeError(f"{entry}() takes {len(params)} arguments ({names}), got {len(args)}")
    for spec, value in zip(params, args, strict=True):
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
    storage = spec.dtype.value.torch_storage
    if found != spec.dtype.name and value.dtype != spec.dtype.to_torch() and not (
            storage is not None and str(value.dtype) == f"torch.{storage}"):
        held = f" (a {spec.dtype.to_torch()} tensor of its codes)" if storage else ""
        if spec.dtype.packed:
            held = (f" (a {spec.dtype.to_torch()} or torch.uint8 tensor, two elements a "
                    "byte)")
        raise TypeError(f"parameter {spec.name!r}: expected dtype {spec.dtype.name}{held}, "
                        f"found {found}")
    if tuple(value.shape) != spec.dtype.torch_shape(spec.shape):
        held = (f" (its {spec.dtype.name} elements {list(spec.shape)}, two a byte)"
                if spec.dtype.packed else "")
        raise ValueError(
            f"parameter {spec.name!r}: expected shape "
            f"{list(spec.dtype.torch_shape(spec.shape))}{held}, found {list(value.shape)}"
        )
    # The simulator reads and writes tensors through their host addresses: a tensor
    # elsewhere has none (a `meta` tensor's address is null), a sparse one no dense layout.
    if value.layout is not torch.strided:
        raise TypeError(
            f"parameter {spec.name!r}: expected a dense tensor, found a {value.layout} one; "
            "pass tensor.to_dense()"
        )
    if not value.is_cpu:
        raise TypeError(
            f"parameter {spec.name!r}: expected a tensor in host memory, found one on "
            f"{value.device}; the simulator runs on the host: pass tensor.cpu() (and copy "
            "outputs back)"
        )
    if value.is_neg():  # its bytes hold the negated values: a copy by address reads those
        raise TypeError(
            f"parameter {spec.name!r}: expected a tensor whose bytes are its values, found a "
            "lazily negated view; pass tensor.resolve_neg()"
        )
    if spec.direction.writes and torch._debug_has_internal_overlap(value) == 1:
        raise ValueError(
            f"parameter {spec.name!r} is written, but its elements share memory (an expand()ed "
            "or as_strided view); pass a tensor that owns its elements, e.g. tensor.clone()"
        )


def _check_scalar(spec: ParamSpec, value: Any) -> None:
    wanted = numbers.Real if spec.dtype.is_float else numbers.Integral
    if not isinstance(value, wanted):
        raise TypeError(
            f"parameter {spec.name!r}: expected a Python "
            f"{'float' if spec.dtype.is_float else 'int'} "
            f"for scalar {spec.dtype.name}, found {type(value).__name__}"
        )
    if spec.dtype.is_int and isinstance(value, numbers.Integral):
        bits = spec.dtype.bits
        if spec.dtype.is_signed:
            low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        else:
            low, high = 0, (1 << bits) - 1
        if not low <= int(value) <= high:
            raise ValueError(
                f"parameter {spec.name!r}: {value} does not fit scalar {spec.dtype.name} "
                f"[{low}, {high}]"
            )
