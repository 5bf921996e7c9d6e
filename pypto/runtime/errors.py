"""Errors raised by the runtime; all derive from `PyptoRuntimeError`."""

from __future__ import annotations


class PyptoRuntimeError(RuntimeError):
    """Base of every error the runtime raises about an artifact or a run."""


class ArtifactError(PyptoRuntimeError):
    """An artifact directory cannot be loaded: bad manifest, wrong platform/ABI, bad hash."""


class DeviceUnavailableError(PyptoRuntimeError):
    """The artifact targets an NPU platform and this host has no NPU runtime."""


class OrchestrationError(PyptoRuntimeError):
    """The orchestration code reported a failure or submitted an invalid task."""


class KernelError(PyptoRuntimeError):
    """A task's kernel failed; the message names the kernel and the task id."""
