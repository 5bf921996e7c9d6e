"""The generated sources of one program: what codegen hands to the toolchain."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ParamSpec:
    """One entry parameter (or kernel parameter) as recorded in the manifest."""

    name: str
    kind: str  # "tensor" | "scalar"
    dtype: str  # DataType name, e.g. "FP16"
    direction: str = "in"  # "in" | "out" | "inout"; scalars are always "in"
    shape: tuple[int, ...] = ()

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "dtype": self.dtype,
            "direction": self.direction,
            "shape": list(self.shape),
        }


@dataclass(frozen=True)
class KernelSource:
    """C++ for one InCore kernel; the exported symbol is `name`."""

    name: str
    cpp: str
    core_type: str  # "vector" | "cube"
    signature: tuple[ParamSpec, ...]


@dataclass(frozen=True)
class GeneratedSources:
    """Everything codegen produced for one program, ready to compile."""

    entry: str
    params: tuple[ParamSpec, ...]
    outputs: tuple[int, ...]  # indices into params that the entry returns
    kernels: tuple[KernelSource, ...]  # manifest order = kernel_index in submit()
    orchestration_cpp: str
    # Text files published beside the binaries (passes_dump/..., report/...),
    # keyed by their path relative to the artifact directory.
    extra_files: dict[str, str] = field(default_factory=dict)
