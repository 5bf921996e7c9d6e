"""`ChipWorker`: one simulated chip held across runs, for hot loops and resident data.

A plain call (`kernel(*args)`, `CompiledProgram(*args)`) builds fresh cores, copies
every tensor argument into device memory and copies outputs back.  A worker keeps its
cores, its loaded programs and its *resident* tensors between runs::

    with ChipWorker(RunConfig(platform="a2a3sim")) as worker:
        x = worker.alloc_tensor([64, 128], torch.float32)
        x.copy_(data)                       # on the sim, device memory is host-visible
        step = worker.register(compiled)    # a handle: no lookup per call
        for _ in range(100):
            step(x, out)                    # x is bound in place: no copy in or out

A resident tensor passed as an argument is bound in place (no copy in, no copy back:
the kernels write it directly); any other tensor is copied as in a plain call.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from pypto.ir import dtypes
from pypto.runtime.config import RunConfig, caller_location
from pypto.runtime.errors import PyptoRuntimeError, UnsupportedError
from pypto.runtime.loader import LoadedProgram, load_artifact

if TYPE_CHECKING:
    import torch

    from pypto.runtime.memory import SimCore


class RegisteredProgram:
    """A program loaded onto a `ChipWorker`; call it with the entry's arguments."""

    def __init__(self, worker: ChipWorker, program: LoadedProgram) -> None:
        self.worker = worker
        self.program = program

    def __call__(self, *args: Any) -> Any:
        """Runs the program on the worker's cores; returns its output tensor(s)."""
        return self.worker._execute(self.program, args)

    def __repr__(self) -> str:
        return f"RegisteredProgram({self.program.manifest.entry!r})"


RegistrationHandle = RegisteredProgram  # upstream's name of what ChipWorker.register returns


class ChipWorker:
    """A simulated chip that keeps cores, loaded programs and resident tensors across runs.

    One run at a time; `close()` (or leaving the `with` block) frees everything, after
    which the worker refuses further use.
    """

    def __init__(self, config: RunConfig | None = None) -> None:
        if config is not None and not isinstance(config, RunConfig):
            raise TypeError(f"config must be a RunConfig, got {type(config).__name__}")
        self.config = config if config is not None else RunConfig()
        self.config.check_single_device()
        self._cores: list[SimCore] | None = None
        self._resident: dict[int, torch.Tensor] = {}
        self._programs: dict[Path, RegisteredProgram] = {}
        self._closed = False

    @property
    def aicpu_dlopen_count(self) -> int:
        """How many programs this worker has loaded (upstream's count of the device
        scheduler's dlopens: one per registered program, none per dispatch)."""
        return len(self._programs)

    # ------------------------------------------------------------------ device memory
    def alloc_tensor(
        self,
        shape: Sequence[int],
        dtype: torch.dtype | dtypes.DataType | None = None,
        init: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """A resident device tensor (FP32 unless `dtype` says), uninitialised (NaN / 0xA5)
        unless `init` gives its contents (upstream's allocate-and-upload in one step; `init`
        must have the tensor's shape).

        Pass it to `run` or a registered program in place of a host tensor: it is bound
        without copies.  On the simulator its storage is host memory, so reading it or
        `copy_()`-ing into it needs no transfer.
        """
        import torch

        from pypto.runtime.memory import poison_

        self._check_open()
        if dtype is None:
            data_type = dtypes.DataType.FP32
        elif isinstance(dtype, dtypes.DataType):
            data_type = dtype
        else:
            data_type = dtypes.from_torch(dtype)
        tensor = poison_(torch.empty(tuple(shape), dtype=data_type.to_torch()))
        if tensor.numel() == 0:
            raise ValueError("alloc_tensor: a resident tensor needs at least one element")
        if init is not None:
            if tuple(init.shape) != tuple(tensor.shape):
                raise ValueError(f"alloc_tensor: init has shape {list(init.shape)}, the tensor "
                                 f"{list(tensor.shape)}")
            tensor.copy_(init)
        self._resident[tensor.data_ptr()] = tensor
        return tensor

    def free_tensor(self, tensor: torch.Tensor) -> None:
        """Releases a tensor `alloc_tensor` returned; passing it later copies like host data."""
        self._check_open()
        if self._resident.get(tensor.data_ptr()) is not tensor:
            raise ValueError("free_tensor: this tensor was not allocated by this ChipWorker "
                             "(or was freed already)")
        del self._resident[tensor.data_ptr()]

    @property
    def resident_tensors(self) -> tuple[torch.Tensor, ...]:
        """The tensors allocated and not yet freed."""
        return tuple(self._resident.values())

    # ------------------------------------------------------------------ programs
    def register(self, compiled: Any) -> RegisteredProgram:
        """Loads `compiled` (a CompiledProgram, a LoadedProgram or an artifact path) once.

        The handle runs it on this worker without looking it up again: the form for
        hot loops.  Registering the same artifact twice returns the same handle.
        """
        self._check_open()
        if isinstance(compiled, LoadedProgram):
            key = compiled.manifest.path.parent.resolve()
            program = compiled
        else:
            path = getattr(compiled, "output_dir", compiled)
            if not isinstance(path, (str, os.PathLike)):
                raise TypeError(
                    "register/run take a CompiledProgram (kernel.compile(...)), a LoadedProgram "
                    f"or an artifact directory, got {type(compiled).__name__}"
                )
            key = Path(path).resolve()
            if key in self._programs:
                return self._programs[key]
            program = load_artifact(key, platform=self.config.platform)
        handle = self._programs.get(key)
        if handle is None:
            if program.platform != self.config.platform:
                raise ValueError(
                    f"the program is built for {program.platform!r}, this worker simulates "
                    f"{self.config.platform!r}"
                )
            handle = self._programs[key] = RegisteredProgram(self, program)
        return handle

    def run(self, compiled: Any, *args: Any) -> Any:
        """Runs `compiled` on `args` (registering it first); returns its output tensor(s)."""
        return self.register(compiled)(*args)

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Frees the cores, the programs and every resident tensor; idempotent."""
        self._closed = True
        self._resident.clear()
        self._programs.clear()
        self._cores = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise PyptoRuntimeError("this ChipWorker is closed; create a new one")

    def _execute(self, program: LoadedProgram, args: Sequence[Any]) -> Any:
        self._check_open()
        from pypto.runtime.execution import ProgramRun, make_cores

        if self._cores is None:
            self._cores = make_cores(program, self.config.workers)
        run = ProgramRun(program, self.config, cores=self._cores, resident=self._resident)
        program.last_schedule = run.scheduler
        try:
            result = run.execute(args)
        except BaseException:
            program.check_bounds_faults()  # an out-of-bounds access explains it best
            raise
        program.check_bounds_faults()
        return result

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._resident)} resident tensors"
        return f"ChipWorker({self.config.platform!r}, {state})"


class DistributedWorker:
    """Upstream PyPTO's worker for multi-rank programs (a HOST orchestrator over several
    chips).  This project runs single-chip programs: constructing one is refused."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise UnsupportedError(
            f"{caller_location()}: DistributedWorker runs multi-rank (distributed) programs; "
            "this project compiles and runs single-chip programs only",
            hint="run the chip-level @pl.jit program with a ChipWorker, which keeps resident "
                 "tensors (alloc_tensor) across the programs it registers")
