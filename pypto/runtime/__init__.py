"""pypto.runtime: load prebuilt artifacts and run them (host simulator here).

A deployed kernel library runs with this package alone: it imports nothing of the
compiler (language, passes, codegen, toolchain): `tests/architecture/layering.py` holds
the layers it may import (the IR's types, `pypto.platform`, `pypto.records`, and the
golden files' format and the comparison, `pypto.golden_files` and `pypto.comparison`,
never `pypto.golden`, which makes goldens).
"""

from pypto.comparison import GoldenReport, Tolerance
from pypto.golden_files import write_golden
from pypto.runtime.bench import BenchmarkStats, TraceInvocation, TraceSpan, benchmark
from pypto.runtime.config import RunConfig
from pypto.runtime.errors import (
    ArtifactError,
    DeviceUnavailableError,
    KernelError,
    OrchestrationError,
    PyptoRuntimeError,
    RaceError,
    UnsupportedError,
)
from pypto.runtime.golden import GoldenError, GoldenMismatchError, GoldenRecord
from pypto.runtime.harness import run
from pypto.runtime.library import CheckTable, Library, load_library
from pypto.runtime.loader import LoadedProgram, load_artifact, verify_artifact
from pypto.runtime.tensor_spec import TensorSpec
from pypto.runtime.worker import (
    ChipWorker,
    DistributedWorker,
    RegisteredProgram,
    RegistrationHandle,
)


def __getattr__(name: str):
    """`DeviceTensor`, upstream's type of a worker's resident tensor: here the tensor
    `ChipWorker.alloc_tensor` returns is a torch tensor in the simulated device memory,
    which the host reads directly (torch is imported when the name is first read)."""
    if name == "DeviceTensor":
        import torch

        return torch.Tensor
    raise AttributeError(f"module 'pypto.runtime' has no attribute {name!r}")


__all__ = [
    "ArtifactError",
    "BenchmarkStats",
    "CheckTable",
    "ChipWorker",
    "DeviceTensor",
    "DeviceUnavailableError",
    "DistributedWorker",
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
    "RegistrationHandle",
    "RunConfig",
    "TensorSpec",
    "Tolerance",
    "TraceInvocation",
    "TraceSpan",
    "UnsupportedError",
    "benchmark",
    "load_artifact",
    "load_library",
    "run",
    "verify_artifact",
    "write_golden",
]
