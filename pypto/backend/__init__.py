"""`pypto.backend`: upstream PyPTO's names for the NPU generations a program targets.

`BackendType.Ascend910B` / `BackendType.Ascend950` name the backends of build_rules/
(`RunConfig(backend_type=...)`, `ir.compile(backend_type=...)` check that the platform is of
that backend); `pto_backend.PartialCodegenError` is the error a program that cannot be
lowered or generated raises.

`set_backend_type(BackendType.X)` configures the backend for what takes none of its own
(`PassManager.get_strategy(...).run_passes(program)`, the pass-IR validation): once set it
stays, as upstream's; setting another one is an error until `reset_for_testing()`.
`get_backend_type()` reads it (an error when none is set), `is_backend_configured()` says
whether one is.
"""

from __future__ import annotations

import enum

from pypto.platform import backend_names

# Members from build_rules/ (data, not code): mypy cannot list them.
BackendType = enum.Enum("BackendType", {name: name for name in backend_names()},  # type: ignore[misc]
                        module=__name__)
BackendType.__doc__ = "The NPU generations of build_rules/backends/ (Ascend910B, Ascend950)."

_configured: list[BackendType] = []  # the configured backend, at most one


def set_backend_type(backend_type: BackendType) -> None:
    """Configures the backend (once: another one needs reset_for_testing() first)."""
    if not isinstance(backend_type, BackendType):
        raise TypeError(f"set_backend_type takes a BackendType, got {backend_type!r}")
    if _configured and _configured[0] is not backend_type:
        raise ValueError(f"the backend is already {_configured[0].name}; call "
                         "reset_for_testing() before configuring another")
    _configured[:] = [backend_type]


def get_backend_type() -> BackendType:
    """The configured backend."""
    if not _configured:
        raise RuntimeError("no backend is configured: call "
                           "pypto.backend.set_backend_type(BackendType.Ascend910B) (or "
                           "Ascend950) first")
    return _configured[0]


def is_backend_configured() -> bool:
    return bool(_configured)


def reset_for_testing() -> None:
    """Forgets the configured backend."""
    _configured.clear()


__all__ = ["BackendType", "get_backend_type", "is_backend_configured", "reset_for_testing",
           "set_backend_type"]
