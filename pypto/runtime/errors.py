"""Errors raised by the runtime; all derive from `PyptoRuntimeError`."""

from __future__ import annotations

from pypto.ir.errors import UserError
from pypto.ir.ops.task_arrays import SPECIALISED_PARAM_STATUS


class PyptoRuntimeError(UserError, RuntimeError):
    """Base of every error the runtime raises about an artifact or a run."""


class ArtifactError(PyptoRuntimeError):
    """An artifact directory cannot be loaded: bad manifest, wrong platform/ABI, bad hash."""


class DeviceUnavailableError(PyptoRuntimeError):
    """The artifact targets an NPU platform and this host has no NPU runtime."""


class UnsupportedError(PyptoRuntimeError):
    """A feature upstream PyPTO has and this project does not (multi-rank programs, ...):
    the message names it and where it was asked for, the hint what to do instead."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message + (f"\n  hint: {hint}" if hint else ""))
        self.hint = hint


class OrchestrationError(PyptoRuntimeError):
    """The orchestration code reported a failure or submitted an invalid task."""


class KernelError(PyptoRuntimeError):
    """A task's kernel failed; the message names the kernel and the task id."""


class RaceError(PyptoRuntimeError):
    """Two tasks access overlapping bytes, at least one writes, and no edge orders them.

    Raised by `RunConfig(detect_races=True)` when the conflicting task is submitted.
    `kind` is "write-after-read", "read-after-write" or "write-after-write"; `earlier`
    and `later` are the task ids in submission order, `writer` and `reader` the roles
    (for a write-after-write both write: `reader` is None), `buffer` names the bytes.
    """

    def __init__(self, message: str, *, earlier: int, later: int, kind: str, buffer: str):
        super().__init__(message)
        self.earlier = earlier
        self.later = later
        self.kind = kind
        self.buffer = buffer

    @property
    def writer(self) -> int:
        """The task that writes (the later one, unless a read follows an unordered write)."""
        return self.earlier if self.kind == "read-after-write" else self.later

    @property
    def reader(self) -> int | None:
        """The task that reads, or None when both write."""
        if self.kind == "write-after-write":
            return None
        return self.later if self.kind == "read-after-write" else self.earlier


# What the generated orchestration's non-zero return codes mean (orchestration.cpp.j2);
# 1 and 2 follow a failed alloc_tensor / dispatch, whose own error is raised instead.
_ORCHESTRATION_STATUS = {
    3: "a task's window of a tensor lies outside the tensor (it starts before the "
       "tensor or past its end); check the loop bounds and offsets around the `pl.at` "
       "blocks and the slices, which decide each task's window",
    4: "an index of an array of task ids (`tids[i] = tid`) lies outside the array",
    5: "an input tensor holds another value than the one the program was specialised for "
       "(a value its orchestration reads and uses as a tensor extent); run the program "
       "through pypto.runtime.run(program, ...), which specialises it for each call",
}


def orchestration_failed(manifest, status: int) -> OrchestrationError:
    """The error for an orchestration entry that returned `status` (non-zero)."""
    what = f"{manifest.orchestration_file}: {manifest.orchestration_entry} returned {status} " \
           f"for {manifest.entry!r}"
    reason = _ORCHESTRATION_STATUS.get(status)
    index = status - SPECIALISED_PARAM_STATUS
    if 0 <= index < len(manifest.params):
        name = manifest.params[index].name
        reason = (f"argument `{name}` is not the value this artifact was specialised for "
                  f"(compile({name}=value), or a bare-dtype parameter such as `{name}: "
                  f"pl.FP32`); compile it for this value, or leave `{name}` a run-time value "
                  f"(compile({name}=pl.RUNTIME), or annotate it pl.Scalar[...])")
    return OrchestrationError(f"{what}: {reason}" if reason else what)
