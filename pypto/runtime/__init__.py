"""pypto.runtime: load prebuilt artifacts and run them (host simulator here).

A deployed kernel library runs with this package alone: it imports nothing of the
compiler (language, passes, codegen, toolchain), only `pypto.ir.dtypes` and
`pypto.platform`.
"""

from pypto.runtime.comparison import GoldenReport, Tolerance
from pypto.runtime.config import RunConfig
from pypto.runtime.errors import (
    ArtifactError,
    DeviceUnavailableError,
    KernelError,
    OrchestrationError,
    PyptoRuntimeError,
    RaceError,
)
from pypto.runtime.golden import GoldenError, GoldenMismatchError, GoldenRecord, write_golden
from pypto.runtime.library import CheckTable, Library, load_library
from pypto.runtime.loader import LoadedProgram, load_artifact, verify_artifact
from pypto.runtime.worker import ChipWorker, RegisteredProgram

__all__ = [
    "ArtifactError",
    "CheckTable",
    "ChipWorker",
    "DeviceUnavailableError",
    "GoldenError",
    "GoldenMismatchError",
    "GoldenRecord",
    "GoldenReport",
    "KernelError",
    "Library",
    "LoadedProgram",
    "OrchestrationError",
    "PyptoRuntimeError",
    "RaceError",
    "RegisteredProgram",
    "RunConfig",
    "Tolerance",
    "load_artifact",
    "load_library",
    "verify_artifact",
    "write_golden",
]
