"""pypto.runtime: load prebuilt artifacts and run them (host simulator here).

A deployed kernel library runs with this package alone: it imports nothing of the
compiler (language, passes, codegen, toolchain), only `pypto.ir.dtypes` and
`pypto.platform`.
"""

from pypto.runtime.config import RunConfig
from pypto.runtime.errors import (
    ArtifactError,
    DeviceUnavailableError,
    KernelError,
    OrchestrationError,
    PyptoRuntimeError,
)
from pypto.runtime.loader import LoadedProgram, load_artifact

__all__ = [
    "ArtifactError",
    "DeviceUnavailableError",
    "KernelError",
    "LoadedProgram",
    "OrchestrationError",
    "PyptoRuntimeError",
    "RunConfig",
    "load_artifact",
]
